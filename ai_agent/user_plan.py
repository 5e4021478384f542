"""`UserPlan`: a person's answer to a paused run, the one pydantic model of the run's data.

A plan arrives from outside (another process, a person, a JSON file), so it is validated at the
edge. `ai_agent.state` names it too (imported on first use), and ``ai_agent.UserPlan`` is it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = ["UserPlan"]


class UserPlan(BaseModel):
    """A person's answer to a paused run, validated before it reaches the graph.

    Examples:
        >>> UserPlan(allow_continue=True, instructions="Use the backup file").allow_continue
        True
        >>> UserPlan(allow_continue=False).approve
        []
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_continue: bool = Field(
        default=True, description="False ends the run as cancelled with a clear final text."
    )
    instructions: str | None = Field(
        default=None, description="Guidance added to the conversation as a user message."
    )
    activate_tools: list[str] = Field(
        default_factory=list, description="Catalog tools to make active from now on."
    )
    approve: list[str] = Field(
        default_factory=list,
        description="Ids of the calls the gate report shows to run, or '*' for all of them.",
    )
    deny: list[str] = Field(
        default_factory=list,
        description="Ids of the calls the gate report shows to cancel, or '*' for all of them.",
    )
    edit_args: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict,
        description="Calls the gate report shows to run with other arguments: each call's id "
        "and the whole arguments to run it with instead (checked against the tool's schema). "
        "Editing a call approves it as edited; the original arguments are kept beside them.",
    )
    grant_scope: Literal["call", "tool", "args"] = Field(
        default="call",
        description="How far an approval reaches: this call, this tool for the rest of the run, "
        "or this tool with these exact arguments.",
    )
    always_allow: Literal["run", "args", "tool"] | None = Field(
        default=None,
        description="Also store an always-allow rule for each call this plan approves: this "
        "tool for this run ('run'), this tool with these exact arguments in any run ('args'), "
        "or this tool always ('tool'). Rules are listed and revoked with `ai-agent rules`.",
    )
    confirm_always: bool = Field(
        default=False,
        description="Confirms an always_allow 'tool' rule for a modification tool: every call "
        "of it, in every run, runs unasked (a rule never covers a call the tool escalates).",
    )
    gate_token: str | None = Field(
        default=None,
        # What the gate hands out (`ai_agent.nodes.gate.gate_token`). The check compares it in
        # constant time (hmac.compare_digest), which raises TypeError for text not ASCII.
        pattern=r"^[0-9a-f]{32}$",
        description="The token of the gate report this plan answers (its 'token'). A plan "
        "served from the queue must carry it; submit_plan attaches it for you.",
    )
