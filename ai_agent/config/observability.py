"""How a run is watched: log lines, request ids, traces and metrics, live streaming (spec 6.2, 6.3).

Nothing is exported or logged by default; these sections say what to do when the application asks.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from ai_agent.config.section import Section, check_import_path, check_regex

__all__ = ["LoggingConfig", "ObservabilityConfig", "StreamingConfig"]


class LoggingConfig(Section):
    """How the engine logs (spec 6.2.2). Every pattern must compile, or loading fails.

    Examples:
        >>> LoggingConfig(level="debug").level
        'DEBUG'
    """

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO",
        description="The ai_agent logger's level, when configure_logging or the CLI installs a "
        "handler.",
    )
    structured: bool = Field(default=False, description="JSON lines instead of text.")
    include_request_body: bool = Field(
        default=False, description="Log model request bodies at DEBUG."
    )
    include_response_body: bool = Field(
        default=False, description="Log model response bodies at DEBUG."
    )
    body_size_limit: int = Field(default=1024, ge=0, description="Max bytes of a logged body.")
    include_correlation_id: bool = Field(
        default=True,
        description="Thread, run, stage, iteration, request and tool-call ids on every line.",
    )
    redact_authorization: bool = Field(
        default=True, description="Mask Authorization headers and bearer tokens."
    )
    redact_api_keys: bool = Field(
        default=True, description="Mask API keys in query strings (api_key=, key=, token=)."
    )
    sensitive_patterns: list[Annotated[str, AfterValidator(check_regex)]] = Field(
        default_factory=lambda: [r"password=\S+", r"secret=\S+"],
        description="Regular expressions whose matches are masked in every record.",
    )
    slow_response_seconds: float = Field(
        default=10.0, gt=0, description="Model calls slower than this are logged at WARNING."
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @property
    def compiled_patterns(self) -> list[re.Pattern[str]]:
        """The sensitive patterns, compiled.

        Examples:
            >>> LoggingConfig().compiled_patterns[0].sub("***", "password=hunter2")
            '***'
        """
        return [re.compile(pattern) for pattern in self.sensitive_patterns]


class ObservabilityConfig(Section):
    """Request ids, trace propagation and metrics (spec 6.3.1). Nothing is exported by default.

    ``custom_collectors`` holds import paths (``package.module:Name``); this module only checks
    their form and never imports them.

    Examples:
        >>> ObservabilityConfig(request_id_format="ulid").request_id_format
        'ulid'
    """

    request_id_format: Literal["uuid4", "ulid"] = Field(
        default="uuid4", description="uuid4, or ulid (26 characters that sort by time)."
    )
    propagate_trace_context: bool = Field(
        default=True, description="Model requests carry X-Request-ID, traceparent and tracestate."
    )
    enable_otel_instrumentation: bool = Field(
        default=False,
        description="OpenTelemetry spans for runs, stages, model and tool calls (the otel extra).",
    )
    metrics_enabled: bool = Field(
        default=True, description="Time runs, stages, model and tool calls (agent.metrics)."
    )
    custom_collectors: list[Annotated[str, AfterValidator(check_import_path)]] = Field(
        default_factory=list,
        description="Import paths of more metric collectors (package.module:Name).",
    )


class StreamingConfig(Section):
    """What is streamed (spec 5.3.1).

    Examples:
        >>> StreamingConfig(chunk_size=4096).chunk_size
        4096
    """

    stream_model_responses: bool = Field(
        default=True, description="Ask the server for streamed replies while someone watches."
    )
    stream_tool_results: bool = Field(
        default=True, description="Send tool output events as it arrives."
    )
    chunk_size: int = Field(default=1024, gt=0, description="Bytes per chunk of tool output.")
