"""The toolsmaker on the Agent: build, review, activate and roll back generated tools.

Method names follow the toolsmaker spec. The tool lifecycle of the spec (``set_tools``,
``add_tool``, ``remove_tool``, ``list_tools``) sits on the same runtime registry as
``register_tool`` and friends (`ai_agent.graph.tools_mixin`): static and generated tools
are one catalog, and runs pin one snapshot of it per cycle.

At construction the Agent registers every active generated version (``active_versions.json``)
and makes it active in new runs, and binds the built-in ``propose_tool`` to its toolsmaker.
Nothing of the toolsmaker is imported before an Agent needs it.

Examples:
    >>> import tempfile, os
    >>> from ai_agent import Agent
    >>> d = tempfile.mkdtemp()
    >>> agent = Agent(checkpoint_path=":memory:", memory_path=None, workdir=d,
    ...               toolsmaker_dir=os.path.join(d, "tm"))
    >>> built = agent.build_dynamic_tool_from_intent(
    ...     {"name": "shout", "purpose": "Echo a text.", "inputs": {"text": "string"}})
    >>> built.status.value
    'approval_required'
    >>> _ = agent.approve_dynamic_tool("shout", 1)
    >>> agent.activate_tool_version("shout", 1).name
    'shout'
    >>> "shout" in agent.initial_tools
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ConfigError, UnknownToolError
from ai_agent.graph.tools_mixin import ToolsMixin
from ai_agent.tools.adapters import as_tool_spec, is_tool
from ai_agent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from ai_agent.tools.maker import (
        BuildRecord,
        BuildResult,
        SandboxLimits,
        ToolBuildRequest,
        ToolsmakerRegistry,
    )

__all__ = ["ToolsmakerMixin"]


class ToolsmakerMixin(ToolsMixin):
    """Generated tools on the Agent (see the module docstring).

    Its options, ``toolsmaker_dir`` and ``toolsmaker_audit_path``, are arguments of the Agent's
    constructor (documented on `ai_agent.Agent`).
    """

    def _set_up_toolsmaker(self) -> None:
        self._toolsmaker: ToolsmakerRegistry | None = None
        self._bind_propose_tool()
        if (self.toolsmaker_dir / "active_versions.json").exists():
            for spec in self.toolsmaker.load_active():
                self._start_with(spec.name)

    # The toolsmaker ---------------------------------------------------------------------------
    @property
    def toolsmaker(self) -> ToolsmakerRegistry:
        """The `ai_agent.tools.maker.ToolsmakerRegistry` over this Agent's registry."""
        if self._toolsmaker is None:
            from ai_agent.tools.maker import ToolsmakerRegistry

            files = self.settings.tool_config.files
            self._toolsmaker = ToolsmakerRegistry(
                self.toolsmaker_dir,
                audit_path=self.toolsmaker_audit_path,
                runtime=self.registry,
                base_dir=files.base_dir or self.policy.workdir,
                limits=self._sandbox_limits(),
                protected=self.protected,
            )
        return self._toolsmaker

    def _sandbox_limits(self) -> SandboxLimits:
        from ai_agent.tools.maker import SandboxLimits

        # Every setting but the two locations is a limit of the same name.
        limits = self.settings.tool_config.toolsmaker.model_dump(exclude={"dir", "audit_path"})
        return SandboxLimits(**limits, max_output_chars=self.policy.max_output_chars)

    def _bind_propose_tool(self) -> None:
        from ai_agent.tools.maker.propose import PROPOSE_TOOL, ProposeTool

        if PROPOSE_TOOL not in self.registry:
            return
        # The preview is a method of the ProposeTool behind the spec (its fn is the wrapper
        # that checks and passes the arguments).
        owner = getattr(self.registry[PROPOSE_TOOL].preview, "__self__", None)
        if isinstance(owner, ProposeTool):  # not when the user put their own tool there
            owner.bind(
                lambda: self.toolsmaker,
                unattended=lambda: self.policy.unattended,
                on_activate=self._start_with,
            )

    def _start_with(self, name: str) -> None:
        if name not in self.initial_tools:
            self.initial_tools.append(name)

    # The spec's tool lifecycle ----------------------------------------------------------------
    def set_tools(self, tools: Iterable[Any] | str) -> list[str]:
        """Replace the tools new runs start with.

        Args:
            tools: Catalog names, groups, namespaces or globs (a list, or one comma-separated
                string), and/or tools in any supported form (registered first, replacing a
                tool of the same name).

        Returns:
            The names new runs start with, in order.

        Raises:
            ConfigError: an unknown name, or an object that is not a tool.
        """
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
        self.initial_tools[:] = names
        return names

    def add_tool(self, tool: Any, **options: Any) -> ToolSpec:
        """Register a tool and make it active in new runs (``register_tool`` with activate).

        Args:
            tool: A tool in any supported form.
            **options: ``register_tool``'s options (``name``, ``namespace``, ``replace``...).

        Returns:
            Its ToolSpec.

        Raises:
            ToolRegistrationError: an invalid tool, or a name taken (without ``replace``).
        """
        return self.register_tool(tool, activate=True, **options)

    def remove_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (``unregister_tool``).

        For a generated tool this only affects this Agent: its version stays active on disk
        (``rollback`` or a newer version changes that) and is loaded again by the next Agent.

        Args:
            name: The tool's name.

        Returns:
            The ToolSpec that was removed.

        Raises:
            UnknownToolError: no tool has this name.
        """
        return self.unregister_tool(name)

    # The toolsmaker flow ----------------------------------------------------------------------
    def create_tool_build_request_from_intent(self, intent: Mapping[str, Any]) -> ToolBuildRequest:
        """A build request from a structured intent.

        Args:
            intent: ``name``, ``purpose``, ``inputs``, ``outputs``, ``capabilities``,
                ``allowed_paths``, ``allowed_domains``, ``secrets``, ``risk`` and optionally
                ``code``.

        Returns:
            The `ai_agent.tools.maker.ToolBuildRequest`.

        Raises:
            ToolBuildError: not a mapping, unknown fields, or no name or purpose.
        """
        return self.toolsmaker.request_from_intent(intent)

    def build_dynamic_tool(self, request: ToolBuildRequest) -> BuildResult:
        """Build, validate and prepare a tool version for review.

        Args:
            request: What to build.

        Returns:
            The result: ``approval_required`` with the review artifact when it passed
            validation (an identical earlier build is reused), ``draft`` when it did not.

        Raises:
            ToolBuildError: a name that cannot name files.
        """
        return self.toolsmaker.build(request)

    def build_dynamic_tool_from_intent(self, intent: Mapping[str, Any]) -> BuildResult:
        """`create_tool_build_request_from_intent` then `build_dynamic_tool`.

        Args:
            intent: The structured intent.

        Returns:
            The build's result.

        Raises:
            ToolBuildError: not an intent.
        """
        return self.toolsmaker.build_from_intent(intent)

    def approve_dynamic_tool(self, name: str, version: int) -> BuildRecord:
        """A person approved this version (``approval_required -> approved``).

        Args:
            name: The tool.
            version: The version.

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.approve(name, version)

    def reject_dynamic_tool(self, name: str, version: int, reason: str = "") -> BuildRecord:
        """A person rejected this version (``approval_required -> rejected``, final).

        Args:
            name: The tool.
            version: The version.
            reason: Why (kept in the record and the audit log).

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.reject(name, version, reason=reason or "rejected")

    def activate_tool_version(
        self, name: str, version: int, max_output_chars: int | None = None
    ) -> ToolSpec:
        """Activate an approved version: registered now, callable from runs' next cycle.

        It becomes active in new runs; a run already going gets it in its catalog from its next
        cycle (a plan can activate it there).

        Args:
            name: The tool.
            version: An approved version.
            max_output_chars: Cap of its result text (None: the Agent's ``max_output_chars``).

        Returns:
            Its runtime ToolSpec.

        Raises:
            ToolTransitionError: the version is not approved.
            ToolPolicyViolation: its code changed on disk since the review.
            ToolBuildError: a static tool holds the name.
        """
        spec = self.toolsmaker.activate(name, version, max_output_chars=max_output_chars)
        self._start_with(name)
        return spec

    def rollback_tool(self, name: str, version: int | None = None) -> ToolSpec:
        """Make an earlier activated version of a generated tool active again.

        Args:
            name: The tool.
            version: The version to return to (None: the one activated before the active one).

        Returns:
            That version's runtime ToolSpec (active in new runs).

        Raises:
            ToolTransitionError: nothing to roll back to.
        """
        spec = self.toolsmaker.rollback(name, version)
        self._start_with(name)
        return spec
