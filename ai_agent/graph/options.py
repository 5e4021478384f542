"""The Agent's arguments, checked when it is built: the run policy and the engine's own paths.

A bad argument is a `ConfigError` from the constructor, before anything runs: an iteration cap
or a gate threshold out of range, an unknown gate profile. What runs then receive is a
`RunPolicy` (the same for every run of the Agent) and the `ProtectedPaths` the tools never reach.

Examples:
    >>> from ai_agent import AgentSettings
    >>> policy = run_policy(AgentSettings(_env_file=None), max_iterations=3, gate_profile="batch")
    >>> policy.max_iterations, policy.gate_threshold
    (3, 0.9)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ai_agent.checkpoints.store import is_postgres_url
from ai_agent.config import MAX_ITERATIONS, AgentSettings
from ai_agent.context import ApprovalPolicy, RunPolicy
from ai_agent.errors import ConfigError
from ai_agent.structured import OutputSpec
from ai_agent.tools.builtin.protected import ProtectedPaths

__all__ = ["PROFILES", "engine_state", "memory_sqlite_path", "run_policy"]

PROFILES = {"interactive": 0.60, "default": 0.70, "batch": 0.90}


def run_policy(
    s: AgentSettings,
    *,
    system_prompt: str | None = None,
    max_iterations: int | None = None,
    gate_threshold: float | None = None,
    gate_profile: str | None = None,
    execute_all_tool_calls: bool | None = None,
    approvals: Mapping[str, ApprovalPolicy] | None = None,
    unattended: bool = False,
    memory: str | Path | None = None,
    workdir: str | Path = ".",
    output_type: Any = None,
) -> RunPolicy:
    """The policy every run of an Agent follows: its arguments over the settings, checked.

    ``output_type`` (a pydantic model, dataclass, TypedDict or JSON Schema dict) is made an
    `ai_agent.structured.OutputSpec` here, so a type that cannot type an answer is an
    `ai_agent.errors.OutputSchemaError` from the constructor.
    """
    return RunPolicy(
        system_prompt=s.system_prompt if system_prompt is None else system_prompt,
        max_iterations=_iterations(s.max_iterations if max_iterations is None else max_iterations),
        gate_threshold=_threshold(gate_threshold, gate_profile, s),
        execute_all_tool_calls=s.execute_all_tool_calls
        if execute_all_tool_calls is None
        else execute_all_tool_calls,
        max_tool_calls=s.max_tool_calls,
        approvals={
            **RunPolicy().approvals,
            **{str(k): v for k, v in s.approvals.items()},
            **dict(approvals or {}),
        },
        unattended=unattended or s.unattended,
        memory_path=None if memory is None else str(memory),
        workdir=str(workdir),
        stream_tool_results=s.streaming.stream_tool_results,
        stream_chunk_size=s.streaming.chunk_size,
        first_use_gate=s.tool_config.first_use_gate,
        max_output_chars=s.tool_config.max_output_chars,
        output=None if output_type is None else OutputSpec.of(output_type),
        output_mode=s.output.mode,
        output_retries=s.output.max_retries,
        max_concurrent_calls=s.tool_config.max_concurrent_calls,
        output_summary=s.tool_config.output_summary,
        output_summary_timeout=s.tool_config.output_summary_timeout,
        output_summary_input_chars=s.tool_config.output_summary_input_chars,
        media_inputs=frozenset(s.model_backend.media_inputs),
        max_media_bytes=s.model_backend.max_media_bytes,
    )


def engine_state(
    settings: AgentSettings,
    database: Path | str,
    *,
    workdir: str | Path,
    memory: str | Path | None,
    memory_sqlite: Path | None,
    toolsmaker_dir: Path,
    audit_log: Path,
) -> ProtectedPaths:
    """Every path an Agent keeps state in (see `ai_agent.tools.builtin.protected`)."""
    databases = [Path(settings.checkpoint_path)]
    if isinstance(database, Path):
        databases.append(database)
    if memory_sqlite is not None:
        databases.append(memory_sqlite)
    store = settings.memory_store.get_secret_value() if settings.memory_store else None
    if store and not is_postgres_url(store):  # LangGraph's store of long-term memory, a file
        databases.append(Path(store))
    return ProtectedPaths.for_engine(
        workdir=workdir,
        databases=[d for d in databases if d.name != ":memory:"],
        memory=[memory] if memory is not None else [],
        toolsmaker_dir=toolsmaker_dir,
        audit_log=audit_log,
    )


def memory_sqlite_path(memory: str | Path | None, checkpoint_path: Path) -> Path:
    """The SQLite memory: next to the memory file, else next to the checkpoints.

    Examples:
        >>> memory_sqlite_path("notes/memory.jsonl", Path("c.sqlite")).as_posix()
        'notes/memory.sqlite'
    """
    return Path(memory or checkpoint_path).with_name("memory.sqlite")


def _iterations(value: int) -> int:
    if not 1 <= value <= MAX_ITERATIONS:
        raise ConfigError(
            f"max_iterations must be at least 1 and at most {MAX_ITERATIONS:,} (got {value:,})"
        )
    return value


def _threshold(explicit: float | None, profile: str | None, settings: AgentSettings) -> float:
    if explicit is not None:
        if not 0.0 <= explicit <= 1.0:
            raise ConfigError(f"gate_threshold must be between 0 and 1 (got {explicit})")
        return explicit
    if profile is not None:
        if profile not in PROFILES:
            raise ConfigError(
                f"unknown gate profile {profile!r}; choose one of {', '.join(PROFILES)}"
            )
        return PROFILES[profile]
    return settings.effective_gate_threshold
