"""``propose_tool``: the model proposes a new tool during a run; a person decides.

The tool is MODIFICATION and always escalates, so every call waits for a person, whatever the
category policy says (only unattended mode skips the wait, and then the tool is built but never
approved, see below). How a proposal goes:

1. **decide** computes the call's preview, which *builds* the tool (request -> code -> validation
   -> review artifact; an identical proposal reuses its earlier build) and shows the review
   summary, the paths of the review artifact (validation report) and the code, and the diff;
2. the run pauses at the **gate** with that preview (APPROVAL_REQUIRED);
3. a plan that approves the call lets **act** run it: the version is approved (by "plan"), activated
   and registered, and the result asks the act stage to make it active in this run
   (``meta.activate_tools``): the model can call it from the **next cycle**. A plan that denies
   it leaves the version waiting in ``ai-agent tools pending``.

In unattended mode (``--yes``) nobody reviews: the call builds the version and leaves it
``approval_required`` for a person (``ai-agent tools approve NAME@VERSION``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from ai_agent.errors import ToolBuildError, ToolError
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.maker.records import BuildResult, ToolStatus
from ai_agent.tools.schema import Omittable
from ai_agent.tools.spec import ToolCategory, ToolSpec

if TYPE_CHECKING:
    from ai_agent.tools.maker.registry import ToolsmakerRegistry

__all__ = ["PROPOSE_TOOL", "ProposeTool", "propose_tool_spec"]

PROPOSE_TOOL = "propose_tool"
_ESCALATION = "propose_tool: a generated tool needs a person's review before it can run"


def _choices_only(schema: dict[str, Any]) -> None:
    # propose_tool's schema has always given its choices alone, without their type: recorded
    # runs replay offline only against the very same schema.
    schema.pop("type", None)


# The capabilities a generated tool may ask for (`ai_agent.tools.maker.records.CAPABILITIES`).
Capability = Literal["fs_read", "fs_write", "http", "secrets"]
_Capability = Annotated[Capability, Field(json_schema_extra=_choices_only)]
_Risk = Annotated[Literal["low", "medium", "high"], Field(json_schema_extra=_choices_only)]
_Texts = Omittable[list[str]]
_INPUTS = "Parameter name -> JSON type (string, integer, number, boolean, object, array)."
_PATHS = "Workspace subdirectories it may read (fs_read) or write (fs_write)."
_DOMAINS = "Hosts it may reach over HTTP (api.example.com, *.example.com)."
_CODE = (
    "Optional Python module defining class GeneratedTool with execute(self, **kwargs); without "
    "it a template is used. self.http.request(...) makes HTTP requests, self.secrets holds the "
    "declared secrets."
)


class ProposeTool:
    """The function, preview and escalation of ``propose_tool``, bound to a toolsmaker later.

    The built-in catalog is made before the Agent's toolsmaker exists; the Agent binds it with
    `bind`. Unbound, every call says the toolsmaker is not set up.
    """

    def __init__(self) -> None:
        self._maker: Callable[[], ToolsmakerRegistry] | None = None
        self._unattended: Callable[[], bool] = lambda: False
        self._on_activate: Callable[[str], None] = lambda name: None

    def bind(
        self,
        maker: Callable[[], ToolsmakerRegistry],
        *,
        unattended: Callable[[], bool],
        on_activate: Callable[[str], None],
    ) -> None:
        """Connect to the Agent's toolsmaker.

        Args:
            maker: Returns the Agent's ToolsmakerRegistry (made on first use).
            unattended: Whether the Agent runs unattended now (asked at each call).
            on_activate: Called with the tool's name once a version is active, so new runs
                start with it.
        """
        self._maker, self._unattended, self._on_activate = maker, unattended, on_activate

    def _build(self, args: dict[str, Any]) -> BuildResult:
        if self._maker is None:
            raise ToolBuildError("the toolsmaker is not set up for this tool registry")
        if "tests" in args:
            # Examples run the code (with its paths, hosts and secrets) as soon as it is built:
            # a model's proposal must not run anything before a person has seen it.
            raise ToolBuildError(
                "propose_tool takes no tests: examples run the code before anyone reviews it; "
                "a person adds them when building the tool from Python"
            )
        return self._maker().build_from_intent(args, by="propose_tool")

    def preview(self, args: dict[str, Any]) -> str:
        """Build (or reuse) the proposal and show its review, for the person at the gate.

        Args:
            args: The proposal (an intent).

        Returns:
            The review summary, the paths of the review artifact and the code, and the diff
            against the previous version; or why the proposal cannot be built or failed
            validation.
        """
        try:
            built = self._build(args)
        except ToolError as exc:
            return f"propose_tool: cannot build this tool: {exc}. Approving it changes nothing."
        name, version = built.spec.name, built.spec.version
        if not built.validation.get("ok"):
            errors = "; ".join(built.validation.get("errors", [])[:5])
            return (
                f"propose_tool: {name} v{version} failed validation ({errors}). Approving this "
                "call activates nothing."
            )
        review = self._maker().review(name, version) if self._maker else {}
        # The diff comes last: the preview is cut at a few thousand characters, and what is
        # cut is in the artifact.
        return (
            f"{review.get('summary', name)}\n"
            f"review artifact (diff, validation report): {built.review_path}\n"
            f"code: {built.code_path}\n"
            f"Approving this call approves {name} v{version} and activates it from the next "
            f"cycle; it always runs sandboxed.\n{review.get('diff', '')}"
        ).rstrip("\n")

    def escalate(self, args: dict[str, Any]) -> str:
        """Every proposal waits for a person (a tool-wide grant does not cover it).

        Args:
            args: The proposal (not looked at: the answer is always the same).

        Returns:
            Why the call waits.
        """
        return _ESCALATION

    def run(
        self,
        name: Annotated[str, Field(description="Tool name: a letter, then letters, digits, _.")],
        purpose: Annotated[str, Field(description="What the tool does.")],
        inputs: Annotated[Omittable[dict[str, Any]], Field(description=_INPUTS)] = None,
        outputs: _Texts = None,
        capabilities: Omittable[list[_Capability]] = None,
        allowed_paths: Annotated[_Texts, Field(description=_PATHS)] = None,
        allowed_domains: Annotated[_Texts, Field(description=_DOMAINS)] = None,
        secrets: _Texts = None,
        risk: _Risk = "medium",
        code: Annotated[Omittable[str | None], Field(description=_CODE)] = None,
        *,
        ctx: dict[str, Any],
    ) -> ToolResult:
        """Propose a new tool when no available tool can do the job: name, purpose, typed
        inputs, outputs, capabilities (fs_read, fs_write, http, secrets) with the paths, hosts
        and secrets they need, and optionally the Python code. A person reviews it; once
        approved it can be called from the next step.

        Returns:
            ``ok`` with ``meta.activate_tools`` (the act stage makes the tool active from the
            next cycle); ``ok`` without it in unattended mode (built, left for a person); an
            error result for a proposal that is not an intent (``BAD_ARGUMENTS``) or failed
            validation (``VALIDATION_FAILED``).

        Raises:
            ToolBuildError: the tool is not bound to a toolsmaker.
        """  # noqa: D205 - the model reads the first paragraph whole, as the description
        # The approved call: the intent is built again, which reuses the reviewed build (None
        # is what the model left out; the build ignores it, as it did in the raw arguments).
        given = dict(
            name=name,
            purpose=purpose,
            inputs=inputs,
            outputs=outputs,
            capabilities=capabilities,
            allowed_paths=allowed_paths,
            allowed_domains=allowed_domains,
            secrets=secrets,
            risk=risk,
            code=code,
        )
        intent = {key: value for key, value in given.items() if value is not None}
        try:
            built = self._build(intent)
        except ToolError as exc:
            return ToolResult(status="error", error=str(exc), meta={"code": "BAD_ARGUMENTS"})
        maker = self._maker
        if maker is None:  # pragma: no cover - _build raised already
            raise ToolBuildError("the toolsmaker is not set up for this tool registry")
        name, version = built.spec.name, built.spec.version
        meta: dict[str, Any] = {"tool": name, "version": version, "review": built.review_path}
        if built.status is ToolStatus.DRAFT:
            errors = built.validation.get("errors", [])
            return ToolResult(
                status="error",
                error=f"{name} v{version} failed validation: {'; '.join(errors)}",
                meta={**meta, "code": "VALIDATION_FAILED", "errors": errors},
            )
        if self._unattended():
            return ToolResult(
                status="ok",
                content=f"{name} v{version} was built and waits for a person's review "
                f"(unattended runs never approve generated tools): ai-agent tools approve "
                f"{name}@{version}",
                meta={**meta, "status": built.status.value},
            )
        by = f"plan (run {ctx.get('thread_id')}, call {ctx.get('call_id')})"
        registry = maker()
        if built.status is ToolStatus.APPROVAL_REQUIRED:
            registry.approve(name, version, by=by)
        if built.status in (ToolStatus.APPROVAL_REQUIRED, ToolStatus.APPROVED):
            registry.activate(name, version, by=by)
        elif registry.active_versions().get(name) != version:
            registry.rollback(name, version, by=by)
        self._on_activate(name)
        return ToolResult(
            status="ok",
            content=f"{name} v{version} is approved and active; call it from the next step.",
            meta={**meta, "status": "activated", "activate_tools": [name]},
        )


def propose_tool_spec() -> ToolSpec:
    """The ``propose_tool`` built-in.

    Returns:
        Its ToolSpec (MODIFICATION, group ``toolsmaker``), with an unbound
        `ProposeTool` behind it (the Agent binds it, see ``bind``).
    """
    tool = ProposeTool()
    spec = builtin_spec(
        tool.run,
        name=PROPOSE_TOOL,
        category=ToolCategory.MODIFICATION,
        group="toolsmaker",
        preview=tool.preview,
        escalate=tool.escalate,
    )
    # Its result makes the approved tool active (``meta.activate_tools``): the engine's own.
    return dataclasses.replace(spec, engine_meta=True)
