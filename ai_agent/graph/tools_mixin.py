"""Tool management on the Agent: register, enable, list, call directly, fetch clipped outputs.

Changes to the registry take effect for every run at its next cycle: a run pins one registry
snapshot per cycle (`TurnView`), so a cycle that already showed
the model its tools runs exactly those, even if a tool is replaced or removed meanwhile.

``call_tool`` runs one tool outside any run under the same rules a run applies, except that there
is no run to pause: where a run would wait for a person, ``call_tool`` raises
`ApprovalRequiredError` unless the caller says a person approved
(``approved=True``) or the Agent is unattended. ``deny`` raises
`ToolPolicyViolation` whatever the caller says. The first-time gate of
external tools belongs to runs (it is recorded in run state) and does not apply here.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from ai_agent.checkpoints.store import check_thread_id
from ai_agent.errors import (
    ApprovalRequiredError,
    ToolPolicyViolation,
    UnknownOutputError,
    UnknownToolError,
)
from ai_agent.graph.core import AgentCore
from ai_agent.graph.secrets import ScrubbedToolBox
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.naming import wire_name
from ai_agent.tools.snapshot import missing_env
from ai_agent.tools.spec import ToolSpec

__all__ = ["ToolListing", "ToolsMixin"]


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


class ToolsMixin(AgentCore):
    """Tool management for the Agent (see the module docstring)."""

    # Registration ----------------------------------------------------------------------------
    def register_tool(
        self, tool: Any, *, activate: bool = True, replace: bool = False, **options: Any
    ) -> ToolSpec:
        """Add a tool to the catalog (any supported form); active in new runs by default.

        Args:
            tool: A ToolSpec, ``@tool`` function, BaseTool, pydantic model with ``__call__``,
                LangChain tool, or typed function with a docstring.
            activate: Make it active in runs started from now on. Runs already going see it in
                their catalog from their next cycle; a plan can activate it there.
            replace: Replace a tool of the same name.
            **options: ``name``, ``namespace``, ``category``, ``group``, ``description``,
                ``requires_env``, ``timeout``.

        Raises:
            ToolRegistrationError: the tool is invalid or its name is taken.

        Examples:
            >>> from ai_agent import Agent, tool
            >>> @tool(category="read_only")
            ... def shout(text: str) -> str:
            ...     '''Upper-case a text.'''
            ...     return text.upper()
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> agent.register_tool(shout, namespace="fun").name
            'fun.shout'
        """
        spec = self.registry.register(tool, replace=replace, **options)
        if activate and spec.name not in self.initial_tools:
            self.initial_tools.append(spec.name)
        return spec

    def unregister_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (and from the tools new runs start with)."""
        spec = self.registry.unregister(name)
        if name in self.initial_tools:
            self.initial_tools.remove(name)
        return spec

    def disable_tools(self, *selectors: str) -> list[str]:
        """Hide tools (names, groups, namespaces, globs) from runs without removing them."""
        return self.registry.disable(list(selectors))

    def enable_tools(self, *selectors: str) -> list[str]:
        """Show disabled tools to runs again."""
        return self.registry.enable(list(selectors))

    def tool_groups(self) -> dict[str, list[str]]:
        """Group name -> tool names."""
        return self.registry.groups()

    def list_tools(self, *, include_disabled: bool = True) -> list[ToolListing]:
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
                    active=name in self.initial_tools,
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
    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, approved: bool = False
    ) -> ToolResult:
        """Run one tool directly, under the same policy a run applies.

        The arguments, the result and the errors are documented on `ai_agent.Agent.call_tool`.

        Examples:
            >>> import asyncio
            >>> from ai_agent import Agent
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> result = asyncio.run(agent.call_tool("calculator", {"expression": "19.5% of 349"}))
            >>> result["content"], result["summary"]
            ('68.055', 'calculator: 68.055')
        """
        async with self._tool_session():  # an MCP tool's server is started first
            return await self._call_tool(name, args, approved)

    async def _call_tool(
        self, name: str, args: dict[str, Any] | None, approved: bool
    ) -> ToolResult:
        tools = self.registry.snapshot()
        spec = tools.spec(name)
        if spec is None:
            raise UnknownToolError(
                f"no enabled tool named {name!r}; `ai-agent tools` lists the catalog"
            )
        call = ToolCall(id=f"direct-{uuid.uuid4().hex[:12]}", name=spec.name, args=dict(args or {}))
        # The Agent's secrets are masked here as in a run: the caller may print what it gets.
        box = ScrubbedToolBox(tools, self.secrets)
        review = box.review(call)
        if not review["problems"]:
            self._check_direct(spec, call, review["escalate"], approved, box.preview(call))
        emit = self._on_event
        if emit is not None:
            emit({"type": "tool_started", "stage": "call_tool", "tool": spec.name})
        tool_ctx = {
            "thread_id": None,
            "task": "",
            "iteration": 0,
            "call_id": call["id"],
            "workdir": self.policy.workdir,
        }
        result = await box.execute(call, tool_ctx)
        if emit is not None:
            emit(
                {
                    "type": "tool_finished",
                    "stage": "call_tool",
                    "tool": spec.name,
                    "detail": result["status"],
                }
            )
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

    # Outputs ---------------------------------------------------------------------------------
    async def tool_output(self, thread_id: str, ref: str) -> str:
        """The full text of a tool output that was clipped in a run (``out-<iter>-<call id>``).

        Raises:
            UnknownOutputError: the run kept no output under that reference.
        """
        record = await self.store.get_output(check_thread_id(thread_id), ref)
        if record is None:
            kept = await self.store.list_outputs(thread_id)
            listed = ", ".join(kept) if kept else "none"
            raise UnknownOutputError(
                f"run {thread_id} kept no output {ref!r}; kept outputs: {listed}"
            )
        return record["content"]
