"""AgentTools: the Agent's tools, one collaborator with one job.

It holds the registry composed of the Agent's toolsets (the built-in tools, the user's tools
and toolsets, each MCP server, the generated tools), the names of the tools new runs start
with, the MCP servers (``agent.mcp``) and the toolsmaker (``agent.toolsmaker``), and it opens
the toolsets for every span that may call a tool: ``async with tools.session() as issues``
around a run, a resume, a replay, a plan served by a worker and a direct call. Inside an
``async with Agent`` block the toolsets stay open across spans (`AgentTools.hold`); outside
one, each span opens and closes them. The issues a session yields (a required MCP server that
could not start) go to the run explicitly, as an argument of ``RunContexts.context``: the
first draft raises them at the gate before the model is asked anything.

The Agent's tool methods (``register_tool``, ``list_tools``, ``call_tool``, ``set_tools``,
``activate_tool_version``...) delegate here, or to the registry and the toolsmaker.

Changes to the registry take effect for every run at its next cycle: a run pins one registry
snapshot per cycle (`ai_agent.tools.registry.TurnView`), so a cycle that already showed the
model its tools runs exactly those, even if a tool is replaced or removed meanwhile.

A direct call (`AgentTools.call`) runs one tool outside any run under the same rules a run
applies, except that there is no run to pause: where a run would wait for a person, it raises
`ApprovalRequiredError` unless the caller says a person approved (``approved=True``) or the
Agent is unattended. ``deny`` raises `ToolPolicyViolation` whatever the caller says. The
first-time gate of external tools belongs to runs (it is recorded in run state) and does not
apply here.

At construction the active generated versions (``active_versions.json``) join the catalog
before the Agent's tools are chosen, so they are selected by name or by the group ``generated``
like any other tool, and are active only where selected; the built-in ``propose_tool`` is bound
to the toolsmaker.
Nothing of the toolsmaker is imported before it is needed.

Examples:
    >>> import asyncio
    >>> from ai_agent import AgentSettings
    >>> from ai_agent.context import RunPolicy
    >>> from ai_agent.graph.secrets import settings_secrets
    >>> settings = AgentSettings(_env_file=None)
    >>> tools = AgentTools(["calculator"], settings=settings, policy=RunPolicy(),
    ...                    secrets=settings_secrets(settings))
    >>> tools.initial
    ['calculator']
    >>> async def span():
    ...     async with tools.session() as issues:
    ...         return issues
    >>> asyncio.run(span())
    []
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ai_agent.config import AgentSettings, McpServerConfig
from ai_agent.context import RunPolicy
from ai_agent.errors import (
    ApprovalRequiredError,
    ConfigError,
    ToolPolicyViolation,
    UnknownToolError,
)
from ai_agent.events import ProgressEvent, _DirectToolFinished, _DirectToolStarted, _McpNotice
from ai_agent.graph.secrets import ScrubbedToolBox
from ai_agent.observability.redaction import SecretValues
from ai_agent.resilience import RetryPolicy
from ai_agent.state import Issue, ToolCall, ToolResult, UserPlan
from ai_agent.tools.adapters import as_tool_spec, is_tool
from ai_agent.tools.building import build_tool_set
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.mcp.manager import McpManager
from ai_agent.tools.naming import wire_name
from ai_agent.tools.snapshot import missing_env
from ai_agent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry
    from ai_agent.tools.mcp.pins import ToolPins
    from ai_agent.tools.registry import ToolRegistry

__all__ = ["AgentTools", "ToolListing", "toolsmaker_paths"]


class ToolListing(TypedDict):
    """One catalog entry as ``Agent.list_tools`` and ``ai-agent tools`` show it."""

    name: str
    wire_name: str
    description: str
    category: str
    policy: str
    group: str | None
    namespace: str | None
    enabled: bool
    active: bool
    requires_env: list[str]
    missing_env: list[str]


class AgentTools:
    """The Agent's tools (see the module docstring).

    Args:
        tools: ``Agent(tools=...)``: catalog names, tools in any form, toolsets.
        settings: The Agent's settings (``tool_config``, ``retry``).
        policy: The Agent's run policy (approvals, unattended mode, working directory).
        secrets: The Agent's secret values; the tools' secrets are added to them.
        workdir: The working directory of the tools.
        protected: The engine's own state, out of reach of every tool.
        servers: The MCP servers.
        toolsmaker_dir: Where generated tools are kept (default: the settings').
        toolsmaker_audit_path: The toolsmaker's audit log (default: in ``toolsmaker_dir``).
        on_event: The Agent's ``on_event`` callback, taking typed events (`rendering`).
        pins: Where the MCP servers' tool definitions are pinned (the Agent's run store,
            `ai_agent.graph.tool_pins`); None: they are taken as they come.
    """

    def __init__(
        self,
        tools: Any,
        *,
        settings: AgentSettings,
        policy: RunPolicy,
        secrets: SecretValues,
        workdir: str | os.PathLike[str] = ".",
        protected: ProtectedPaths | None = None,
        servers: Sequence[McpServerConfig] = (),
        toolsmaker_dir: str | os.PathLike[str] | None = None,
        toolsmaker_audit_path: str | os.PathLike[str] | None = None,
        on_event: Callable[[ProgressEvent], None] | None = None,
        pins: ToolPins | None = None,
    ) -> None:
        self.settings = settings
        self.policy = policy
        self.secrets = secrets
        self.protected = protected
        self._on_event = on_event
        self.toolsmaker_dir, self.toolsmaker_audit_path = toolsmaker_paths(
            settings, toolsmaker_dir, toolsmaker_audit_path
        )
        self._toolsmaker: ToolsmakerRegistry | None = None
        self.registry, self.initial = build_tool_set(
            tools,
            config=settings.tool_config,
            workdir=workdir,
            protected=protected,
            prepare=self._load_generated,
        )
        """The catalog; `initial`: the names of the tools new runs start with."""
        self.registry.retry = RetryPolicy.for_tools(settings.retry)
        # Read at each use: a key exported after a pause, or a tool registered later, counts.
        secrets.add_source(lambda: self.registry.snapshot().secret_env_values())
        self.mcp = McpManager(
            servers,
            registry=self.registry,
            on_activate=self.start_with,
            on_event=self._mcp_event,
            pins=pins,
        )
        # What a server's ${VAR} references resolved to is known once it connects.
        secrets.add_source(self.mcp.secret_values)
        self._bind_propose_tool()

    def _load_generated(self, registry: ToolRegistry) -> None:
        """Put the active generated versions in the catalog, before the Agent's tools are chosen.

        They are selectable by name (``tools=["word_count"]``) or by the group ``generated``,
        and active only in the runs that select them, like any other tool.
        """
        self.registry = registry
        if (self.toolsmaker_dir / "active_versions.json").exists():
            self.toolsmaker.load_active()

    def start_with(self, names: Collection[str]) -> None:
        """Make tools active in the runs started from now on."""
        self.initial.extend(n for n in names if n not in self.initial)

    def _mcp_event(self, text: str) -> None:
        # Masked with the Agent's secrets, not only the server's: a notice quotes the server's
        # last stderr lines, which may repeat any key it was handed.
        if self._on_event is not None:
            self._on_event(_McpNotice(self.secrets.text(text)))

    # The catalog -----------------------------------------------------------------------------
    def register(self, tool: Any, *, activate: bool, replace: bool, **options: Any) -> ToolSpec:
        """Add a tool to the catalog (``Agent.register_tool``)."""
        spec = self.registry.register(tool, replace=replace, **options)
        if activate:
            self.start_with([spec.name])
        return spec

    def unregister(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog and from the tools new runs start with."""
        spec = self.registry.unregister(name)
        if name in self.initial:
            self.initial.remove(name)
        return spec

    def set_initial(self, tools: Iterable[Any] | str) -> list[str]:
        """Replace the tools new runs start with (``Agent.set_tools``)."""
        items = (
            [t.strip() for t in tools.split(",") if t.strip()]
            if isinstance(tools, str)
            else list(tools)
        )
        names: list[str] = []
        for item in items:
            if isinstance(item, str):
                try:
                    found = self.registry.select(item)
                except UnknownToolError as exc:
                    raise ConfigError(str(exc)) from None
            elif is_tool(item):
                found = [self.registry.register(as_tool_spec(item), replace=True).name]
            else:
                raise ConfigError(f"cannot use {item!r} as a tool")
            names += [n for n in found if n not in names]
        self.initial[:] = names
        return names

    def listing(self, *, include_disabled: bool = True) -> list[ToolListing]:
        """The catalog with each tool's category, effective policy and state, sorted by name."""
        out: list[ToolListing] = []
        for name in sorted(self.registry):
            spec = self.registry[name]
            enabled = self.registry.is_enabled(name)
            if not enabled and not include_disabled:
                continue
            out.append(
                ToolListing(
                    name=name,
                    wire_name=wire_name(name),
                    description=spec.description,
                    category=spec.category.value,
                    policy=self._policy_of(spec),
                    group=spec.group,
                    namespace=spec.namespace,
                    enabled=enabled,
                    active=name in self.initial,
                    requires_env=list(spec.requires_env),
                    missing_env=missing_env(spec),
                )
            )
        return out

    def _policy_of(self, spec: ToolSpec) -> str:
        policy = self.policy.approvals.get(spec.category.value, "approve")
        if self.policy.unattended and policy in ("confirm", "approve"):
            return "auto (unattended)"
        return policy

    # Direct calls ----------------------------------------------------------------------------
    async def call(
        self, name: str, args: dict[str, Any] | None = None, *, approved: bool = False
    ) -> ToolResult:
        """Run one tool directly, in a span of its own (``Agent.call_tool``)."""
        async with self.session():  # an MCP tool's server is started first
            return await self._call(name, args, approved)

    async def _call(self, name: str, args: dict[str, Any] | None, approved: bool) -> ToolResult:
        tools = self.registry.snapshot()
        spec = tools.spec(name)
        if spec is None:
            withheld = self.registry.withheld(name)
            raise UnknownToolError(
                self.secrets.text(withheld)
                if withheld is not None
                else f"no enabled tool named {name!r}; `ai-agent tools` lists the catalog"
            )
        call = ToolCall(id=f"direct-{uuid.uuid4().hex[:12]}", name=spec.name, args=dict(args or {}))
        # The Agent's secrets are masked here as in a run: the caller may print what it gets.
        box = ScrubbedToolBox(tools, self.secrets)
        review = box.review(call)
        if not review["problems"]:
            self._check_direct(spec, call, review["escalate"], approved, box.preview(call))
        emit = self._on_event
        if emit is not None:
            emit(_DirectToolStarted(spec.name))
        tool_ctx = {
            "thread_id": None,
            "task": "",
            "iteration": 0,
            "call_id": call["id"],
            "workdir": self.policy.workdir,
        }
        result = await box.execute(call, tool_ctx)
        if emit is not None:
            emit(_DirectToolFinished(spec.name, result["status"]))
        return result

    def _check_direct(
        self, spec: ToolSpec, call: ToolCall, escalation: str | None, approved: bool, preview: str
    ) -> None:
        category = spec.category.value
        policy = self.policy.approvals.get(category, "approve")
        if policy == "deny":
            raise ToolPolicyViolation(
                f"{spec.name} is a {category} tool and the policy denies {category} tools"
            )
        if approved or self.policy.unattended:
            return
        reasons = []
        if policy in ("confirm", "approve"):
            reasons.append(f"the {category} policy is {policy!r}")
        if escalation:
            reasons.append(escalation)
        if reasons:
            raise ApprovalRequiredError(
                f"{spec.name} needs a person's approval ({'; '.join(reasons)}). The call:\n"
                f"{preview}\nPass approved=True once it is approved."
            )

    # The toolsmaker ----------------------------------------------------------------------------
    @property
    def toolsmaker(self) -> ToolsmakerRegistry:
        """The `ai_agent.tools.maker.ToolsmakerRegistry` over the registry (made on first use)."""
        if self._toolsmaker is None:
            from ai_agent.tools.maker import ToolsmakerRegistry

            files = self.settings.tool_config.files
            self._toolsmaker = ToolsmakerRegistry(
                self.toolsmaker_dir,
                audit_path=self.toolsmaker_audit_path,
                runtime=self.registry,
                base_dir=files.base_dir or self.policy.workdir,
                limits=self._sandbox_limits(),
                protected=self.protected or (),
            )
        return self._toolsmaker

    def _sandbox_limits(self) -> SandboxLimits:
        from ai_agent.tools.maker import SandboxLimits

        # Every setting but the two locations is a limit of the same name.
        limits = self.settings.tool_config.toolsmaker.model_dump(exclude={"dir", "audit_path"})
        return SandboxLimits(**limits, max_output_chars=self.policy.max_output_chars)

    def _bind_propose_tool(self) -> None:
        from ai_agent.tools.maker.propose import PROPOSE_TOOL, ProposeTool

        spec = self.registry.snapshot().spec(PROPOSE_TOOL)
        # The preview is a method of the ProposeTool behind the spec (its fn is the wrapper that
        # checks and passes the arguments).
        owner = getattr(spec.preview, "__self__", None) if spec is not None else None
        if isinstance(owner, ProposeTool):  # not when the user put their own tool there
            owner.bind(
                lambda: self.toolsmaker,
                unattended=lambda: self.policy.unattended,
                on_activate=lambda name: self.start_with([name]),
            )

    def activate_version(
        self, name: str, version: int, max_output_chars: int | None = None
    ) -> ToolSpec:
        """Activate an approved version; it is active in new runs."""
        spec = self.toolsmaker.activate(name, version, max_output_chars=max_output_chars)
        self.start_with([name])
        return spec

    def rollback(self, name: str, version: int | None = None) -> ToolSpec:
        """Make an earlier activated version active again; it is active in new runs."""
        spec = self.toolsmaker.rollback(name, version)
        self.start_with([name])
        return spec

    # Lifecycle -------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[list[Issue]]:
        """A span that may call tools: every toolset open for it; yields their issues.

        Only the issues of required MCP servers that could not start are yielded.
        """
        async with self.registry.session() as issues:
            yield issues

    def hold(self) -> None:
        """Keep the toolsets open between spans until `aclose` (an ``async with Agent``)."""
        self.registry.hold()

    async def aclose(self) -> None:
        """Close the toolsets, and stop MCP servers started outside any span."""
        try:
            await self.registry.aclose()
        finally:
            await self.mcp.aclose()

    # Plans -----------------------------------------------------------------------------------
    def with_new_tools(self, plan: UserPlan, active: Collection[str]) -> UserPlan:
        """A plan that continues a run also activates the tools of active MCP servers it lacks.

        A server that failed when the run started and connects now, or one added since.
        """
        if not plan.allow_continue or not self.mcp:
            return plan
        wanted = [
            name
            for server in self.mcp.servers
            if server.active
            for name in self.mcp.tool_names(server.name)
            if name not in active and name not in plan.activate_tools
        ]
        if not wanted:
            return plan
        return plan.model_copy(update={"activate_tools": [*plan.activate_tools, *wanted]})


def toolsmaker_paths(
    settings: AgentSettings,
    directory: str | os.PathLike[str] | None = None,
    audit_path: str | os.PathLike[str] | None = None,
) -> tuple[Path, Path]:
    """Where generated tools are kept and their audit log: the arguments, else the settings'.

    Examples:
        >>> toolsmaker_paths(AgentSettings(_env_file=None), "tm")
        (PosixPath('tm'), PosixPath('tm/audit.jsonl'))
    """
    maker = settings.tool_config.toolsmaker
    folder = Path(directory or maker.dir)
    audit = audit_path or maker.audit_path
    return folder, Path(audit) if audit else folder / "audit.jsonl"
