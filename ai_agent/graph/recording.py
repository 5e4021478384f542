"""Recording: every model call and tool call of a run is written to the run store.

The Agent wraps the run context's ModelCaller in `RecordingModel` and its ToolBox in
`RecordingToolBox` (``RunContexts.context``), so the stages never know they are being
recorded. Each record says where it happened: the thread, LangGraph's step and node, and the
checkpoint the node started from (read from LangGraph's runtime, never from ``configurable``).

A model request is identified by `ai_agent.models.request_hash` over the messages, the tool
schemas and the generation parameters from `generation_params`. Those parameters come from
the Agent's configuration (model id, temperature, seed...), through an allowlist: the API key,
the base URL and headers are never among them, and never reach a ModelCaller's arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from ai_agent.checkpoints.recorded import CallPosition, ModelRequest
from ai_agent.context import CallerBase, ModelCall, ModelCaller, ModelReply, OutputStore, ToolBox
from ai_agent.errors import ModelError
from ai_agent.graph.toolboxes import DelegatingToolBox
from ai_agent.models import request_hash
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.media import admit
from ai_agent.tools.model_summary import OutputSummarizer
from ai_agent.tools.policy import args_hash
from ai_agent.tools.results import OutputSummary, bound_output, is_bounded

if TYPE_CHECKING:
    from ai_agent.checkpoints.store import RunStoreProtocol
    from ai_agent.config import ModelBackendSettings

__all__ = [
    "BoundedToolBox",
    "RecordingModel",
    "RecordingToolBox",
    "call_position",
    "generation_params",
    "request_params",
]

# Attributes of a LangChain chat model that shape its reply. An allowlist, so a credential or a
# header can never slip into a recorded request.
_PARAMS = (
    "model_name",
    "model",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "top_p",
    "seed",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "n",
    "reasoning_effort",
)
_JSON_SCALARS = (str, int, float, bool)


def _plain(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(isinstance(v, _JSON_SCALARS) for v in value)
    return isinstance(value, _JSON_SCALARS)


def generation_params(
    model: BaseChatModel | str | None, backend: str, settings: ModelBackendSettings
) -> dict[str, Any]:
    """The generation parameters of an Agent's model, as recorded with every request.

    Derived from configuration only (no model server is started or asked), so a replay computes
    the same parameters as the run it replays.

    Args:
        model: The Agent's ``model`` argument.
        backend: ``"openai"`` or ``"local"``.
        settings: The model backend settings.

    Examples:
        >>> from ai_agent.config import ModelBackendSettings
        >>> generation_params("qwen", "openai", ModelBackendSettings(temperature=0.2))
        {'backend': 'openai', 'model': 'qwen', 'temperature': 0.2}
    """
    if isinstance(model, BaseChatModel):
        params: dict[str, Any] = {"llm": model._llm_type}
        for name in _PARAMS:
            value = getattr(model, name, None)
            if value is not None and _plain(value) and name not in params:
                params[name] = list(value) if isinstance(value, tuple) else value
        return params
    params = {"backend": backend, "model": model if isinstance(model, str) else settings.model}
    for name in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(settings, name)
        if value is not None:
            params[name] = value
    return params


def request_params(
    params: Mapping[str, Any], response_format: dict[str, Any] | None
) -> dict[str, Any]:
    """A request's recorded parameters: the generation parameters and its response format.

    The response format shapes the reply, so it is part of the request hash: a typed run's
    final answer is matched on replay by the schema it asked for.

    Examples:
        >>> request_params({"temperature": 0}, {"type": "json_object"})
        {'temperature': 0, 'response_format': {'type': 'json_object'}}
    """
    if response_format is None:
        return dict(params)
    return {**params, "response_format": response_format}


def call_position() -> CallPosition:
    """Where the current call happens: LangGraph's step and node, and the starting checkpoint."""
    try:
        config = get_config()
    except RuntimeError:  # called outside a graph run (a test, a hook calling the model itself)
        return CallPosition(step=None, stage=None, checkpoint_id=None)
    meta = config.get("metadata") or {}
    info = get_runtime().execution_info
    return CallPosition(
        step=meta.get("langgraph_step"),
        stage=meta.get("langgraph_node"),
        checkpoint_id=info.checkpoint_id if info is not None else None,
    )


def _same(value: Any) -> Any:
    """Nothing to mask."""
    return value


def _error_record(exc: ModelError) -> dict[str, str]:
    """How a model error is recorded: its class name and message (already free of secrets)."""
    return {"type": type(exc).__name__, "message": str(exc)}


class RecordingModel(CallerBase):
    """A ModelCaller that records every call it passes on (reply or model error).

    Args:
        inner: The caller that does the work (the live model, or a replay's player).
        store: Where calls are recorded.
        thread_id: The run they belong to.
        params: The generation parameters (see `generation_params`).
        scrub: Masks secrets in what is recorded (the Agent's ``SecretValues.scrub``): a system
            prompt is sent as it is but recorded masked; the request hash is of what was sent.
    """

    def __init__(
        self,
        inner: ModelCaller,
        store: RunStoreProtocol,
        thread_id: str,
        params: Mapping[str, Any],
        *,
        scrub: Callable[[Any], Any] = _same,
    ) -> None:
        self.inner = inner
        self.store = store
        self.thread_id = thread_id
        self.params = dict(params)
        self.scrub = scrub

    async def answer(self, call: ModelCall) -> ModelReply:
        """Call the inner model and record the request and its reply (or error)."""
        position = call_position()
        params = request_params(self.params, call.response_format)
        request = self.scrub(
            ModelRequest(messages=list(call.messages), tools=list(call.tools), params=params)
        )
        digest = request_hash(call.messages, call.tools, params)
        started = time.perf_counter()
        try:
            reply = await call.to(self.inner)
        except ModelError as exc:
            # Recorded too, so a replay takes the same path (a gate issue, a failed run).
            await self.store.record_model_call(
                self.thread_id,
                position,
                digest,
                request,
                message=None,
                usage={},
                error=self.scrub(_error_record(exc)),
                latency_ms=round((time.perf_counter() - started) * 1000, 3),
                replayed=self._replayed(),
            )
            raise
        await self.store.record_model_call(
            self.thread_id,
            position,
            digest,
            request,
            message=self.scrub(reply["message"]),
            usage=dict(reply["usage"]),
            error=None,
            latency_ms=reply["latency_ms"],
            replayed=self._replayed(),
        )
        return reply

    def _replayed(self) -> bool:
        # A replay's player says whether it served the last call from a recording.
        return getattr(self.inner, "last_source", "live") == "recorded"


class BoundedToolBox(DelegatingToolBox):
    """A ToolBox whose results are bounded as they are made: a large output is kept once.

    Below the recorder: a result whose text passes ``limit`` has its full text kept in the
    run store's outputs and comes back summarized and naming it (`bound_output`). The journal
    (the one record of the outcome, which the recorded call names) and the checkpoints then
    hold the bounded result, instead of full copies beside the kept one. Its images and audio
    are cut to those the model reads (`ai_agent.tools.media.admit`): no bytes are kept that no
    model request will carry.

    Args:
        inner: The tool box that does the work.
        outputs: Where full texts are kept (the run store).
        thread_id: The run.
        limit: The longest result text kept in the run (``max_output_chars``).
        method: How a longer one is shortened (``output_summary``).
        summarizer: Writes the summary when ``method`` is ``model``.
        media_inputs: The kinds of media the model reads (``model_backend.media_inputs``).
        max_media_bytes: The largest part it gets (``model_backend.max_media_bytes``).
    """

    def __init__(
        self,
        inner: ToolBox,
        outputs: OutputStore,
        thread_id: str,
        limit: int,
        method: OutputSummary = "extractive",
        *,
        summarizer: OutputSummarizer | None = None,
        media_inputs: frozenset[str] = frozenset(),
        max_media_bytes: int = 0,
    ) -> None:
        super().__init__(inner)
        self.outputs = outputs
        self.thread_id = thread_id
        self.limit = limit
        self.method: OutputSummary = method
        self.summarizer = summarizer
        self.media_inputs = media_inputs
        self.max_media_bytes = max_media_bytes

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Execute through the inner tool box and bound the result."""
        result = await self.inner.execute(call, tool_ctx)
        result = admit(result, self.media_inputs, self.max_media_bytes)
        text = self.inner.format_result(call["name"], result)
        if not is_bounded(text, result, self.limit):
            # Only a summary made here carries its call's usage: a tool's own claim of one
            # would count tokens no model spent.
            result = _without_summary_usage(result)
        where = (self.thread_id, int(tool_ctx.get("iteration") or 0), call)
        bounded = await bound_output(
            self.outputs,
            where,
            text,
            result,
            self.limit,
            self.method,
            summarizer=self.summarizer,
            task=str(tool_ctx.get("task") or ""),
        )
        return bounded[1]


def _without_summary_usage(result: ToolResult) -> ToolResult:
    """``result`` without a ``summary_usage`` in its meta (a tool's, not the engine's)."""
    meta = result.get("meta")
    if not isinstance(meta, dict) or "summary_usage" not in meta:
        return result
    clean = ToolResult(**result)
    clean["meta"] = {k: v for k, v in meta.items() if k != "summary_usage"}
    return clean


class RecordingToolBox(DelegatingToolBox):
    """A ToolBox that records every tool call it executes; everything else is passed through.

    It sits below act, which journals each call's intent before and outcome after it: the
    journal holds the call's result, and the record points to it.

    Args:
        inner: The tool box that does the work (the registry, or a replay's player).
        store: Where calls are recorded.
        thread_id: The run they belong to.
    """

    def __init__(self, inner: ToolBox, store: RunStoreProtocol, thread_id: str) -> None:
        super().__init__(inner)
        self.store = store
        self.thread_id = thread_id

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Execute through the inner tool box and record the call.

        The record names the call's journal entry (thread, iteration, call id): its result is
        the outcome act journals next, stored there once (``checkpoints/recorded.py``).
        """
        position = call_position()
        started = time.perf_counter()
        result = await self.inner.execute(call, tool_ctx)
        measured = round((time.perf_counter() - started) * 1000, 3)
        await self.store.record_tool_call(
            self.thread_id,
            position,
            call,
            args_hash(call["args"]),
            iteration=int(tool_ctx.get("iteration") or 0),
            duration_ms=float(result.get("execution_time_ms", measured)),
            replayed=getattr(self.inner, "last_source", "live") == "recorded",
        )
        return result
