"""The toolsmaker: the agent proposes tools at run time, a person reviews, the OS confines them.

A structured intent becomes a `ToolBuildRequest`, then a canonical spec and Python code
(`.builder`), checked by `.validator` (a filter and review aid, not the boundary), its
examples (`.examples`) run as real confined calls (`.trials`), moved
through ``draft -> validated -> approval_required -> approved | rejected -> activated``
(`.approvals`), versioned and audited on disk (`.storage`, `.audit`), and loaded
(`.loader`) as a ToolSpec whose every call runs in its own bubblewrap sandbox
(`.confine`; HTTP through `.broker`; the limits in `.limits`, the path and host
allowlists in `.allowlists`, the guarded tool in `.policy`).
`ToolsmakerRegistry` is the only thing that changes this state; the active versions are its
`GeneratedToolset`, one toolset of the Agent's registry. See docs/toolsmaker.md.
"""

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
    from ai_agent.tools.maker.audit import AuditLog, AuditReport, verify_audit
    from ai_agent.tools.maker.builder import request_from_intent
    from ai_agent.tools.maker.limits import SandboxLimits
    from ai_agent.tools.maker.policy import PolicyGuardedTool
    from ai_agent.tools.maker.records import (
        BuildRecord,
        BuildResult,
        GeneratedToolSpec,
        ToolBuildRequest,
        ToolStatus,
    )
    from ai_agent.tools.maker.registry import DEFAULT_TOOLSMAKER_DIR, ToolsmakerRegistry
    from ai_agent.tools.maker.toolset import GeneratedToolset
    from ai_agent.tools.maker.validator import ValidationReport, validate_code, validate_request

__all__ = [
    "DEFAULT_TOOLSMAKER_DIR",
    "AuditLog",
    "AuditReport",
    "BuildRecord",
    "BuildResult",
    "GeneratedToolSpec",
    "GeneratedToolset",
    "PolicyGuardedTool",
    "SandboxLimits",
    "ToolBuildRequest",
    "ToolStatus",
    "ToolsmakerRegistry",
    "ValidationReport",
    "request_from_intent",
    "validate_code",
    "validate_request",
    "verify_audit",
]

# Imported on first use (PEP 562): the catalog's ``propose_tool`` spec lives in ``.propose``,
# and listing the tools must not load the sandbox, the broker and jsonschema with it.
_HOMES = {
    "AuditLog": "ai_agent.tools.maker.audit",
    "AuditReport": "ai_agent.tools.maker.audit",
    "BuildRecord": "ai_agent.tools.maker.records",
    "BuildResult": "ai_agent.tools.maker.records",
    "DEFAULT_TOOLSMAKER_DIR": "ai_agent.tools.maker.registry",
    "GeneratedToolSpec": "ai_agent.tools.maker.records",
    "GeneratedToolset": "ai_agent.tools.maker.toolset",
    "PolicyGuardedTool": "ai_agent.tools.maker.policy",
    "SandboxLimits": "ai_agent.tools.maker.limits",
    "ToolBuildRequest": "ai_agent.tools.maker.records",
    "ToolStatus": "ai_agent.tools.maker.records",
    "ToolsmakerRegistry": "ai_agent.tools.maker.registry",
    "ValidationReport": "ai_agent.tools.maker.validator",
    "request_from_intent": "ai_agent.tools.maker.builder",
    "validate_code": "ai_agent.tools.maker.validator",
    "validate_request": "ai_agent.tools.maker.validator",
    "verify_audit": "ai_agent.tools.maker.audit",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
