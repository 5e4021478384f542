"""The model backend: any OpenAI-compatible ``/v1/chat/completions`` server through ChatOpenAI.

This module turns settings into a LangChain chat model, converts between the run's JSON messages
and LangChain messages at the call boundary, maps client exceptions onto the engine's error tree
(with messages that say what to do, and never a secret), and retries the retryable ones.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ai_agent.context import ModelReply
from ai_agent.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
)
from ai_agent.state import Message, ToolCall

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from ai_agent.config import ModelBackendSettings

__all__ = [
    "ChatModelCaller",
    "classify_model_error",
    "from_langchain",
    "make_chat_model",
    "request_hash",
    "to_langchain",
    "usage_of",
]


def make_chat_model(backend: ModelBackendSettings) -> BaseChatModel:
    """A ChatOpenAI for the configured OpenAI-compatible server.

    Retries are ours (``ChatModelCaller``), so the client's own are off; usage is requested when
    streaming because langchain-openai turns it off whenever ``base_url`` is set. The model gets
    its own HTTP client (langchain-openai otherwise shares one process-wide client, whose pooled
    connections outlive the event loop they were made on); ``ChatModelCaller.aclose`` closes it.
    """
    import httpx
    from langchain_openai import ChatOpenAI

    key = backend.api_key.get_secret_value() if backend.api_key is not None else "not-needed"
    params: dict[str, Any] = {
        "base_url": backend.base_url,
        "api_key": key,
        "model": backend.model,
        "timeout": backend.timeout,
        "max_retries": 0,
        "use_responses_api": False,
        "stream_usage": True,
        "http_async_client": httpx.AsyncClient(timeout=backend.timeout),
    }
    for name in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(backend, name, None)
        if value is not None:
            params[name] = value
    return ChatOpenAI(**params)


# Conversion ----------------------------------------------------------------------------------


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """The run's JSON messages as LangChain messages."""
    out: list[BaseMessage] = []
    for m in messages:
        role, content = m["role"], m["content"]
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"id": c["id"], "name": c["name"], "args": c["args"], "type": "tool_call"}
                for c in m.get("tool_calls", [])
            ]
            out.append(AIMessage(content, tool_calls=calls))
        else:
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id", "")))
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def from_langchain(message: BaseMessage, *, turn: int) -> Message:
    """An assistant reply as a JSON message. Calls without an id get a stable one."""
    out = Message(role="assistant", content=_text_of(message.content))
    calls: list[ToolCall] = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or []):
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{turn}_{i}",
                name=call["name"],
                args=dict(call.get("args") or {}),
            )
        )
    if calls:
        out["tool_calls"] = calls
    return out


def usage_of(message: BaseMessage) -> dict[str, Any]:
    """Token usage reported by the server, in OpenAI's names; empty when it reported none."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return {}
    details = meta.get("input_token_details") or {}
    return {
        "prompt_tokens": meta.get("input_tokens", 0),
        "completion_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
        "cached_tokens": details.get("cache_read", 0) or 0,
    }


def request_hash(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    params: Mapping[str, Any] | None = None,
) -> str:
    """A stable hash of a model request: what decides the reply, nothing else.

    ``params`` are the generation parameters (model, temperature, seed...), never credentials.

    Example:
        >>> a = request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 0})
        >>> a == request_hash([{"content": "hi", "role": "user"}], [], {"temperature": 0})
        True
        >>> a == request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 1})
        False
    """
    request: dict[str, Any] = {"messages": messages, "tools": tools}
    if params:
        request["params"] = dict(params)
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# Errors --------------------------------------------------------------------------------------


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def classify_model_error(
    exc: Exception, *, base_url: str, secrets: Sequence[str] = ()
) -> ModelError:
    """Map a client exception to the engine's error tree, with an actionable message."""
    import openai

    if isinstance(exc, ModelError):
        return exc
    detail = _scrub(str(exc), secrets)
    hint = "pass --base-url or set MAMBA_MODEL_BACKEND__BASE_URL"
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError):
        return ModelUnavailableError(
            f"the model server at {base_url} did not answer in time; check that it is running "
            f"and not overloaded, raise MAMBA_MODEL_BACKEND__TIMEOUT, or {hint}"
        )
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailableError(
            f"cannot reach the model server at {base_url}; start it, or {hint}"
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimitError(
            f"the model server at {base_url} is rate limiting (429): {detail}",
            retry_after=_retry_after(exc),
        )
    if not isinstance(exc, openai.APIStatusError):
        return ModelResponseError(
            f"the reply from {base_url} could not be used ({type(exc).__name__}): {detail}"
        )
    return _status_error(int(status or 0), base_url, detail)


def _status_error(status: int, base_url: str, detail: str) -> ModelError:
    where = f"the model server at {base_url}"
    if status in (401, 403):
        return ModelAuthError(
            f"{where} refused the API key ({status}): {detail}. "
            "Set MAMBA_MODEL_BACKEND__API_KEY and resume."
        )
    if status == 404:
        return ModelResponseError(
            f"{where} answered 404: {detail}. Check the model id "
            "(--model or MAMBA_MODEL_BACKEND__MODEL) and that the URL ends in /v1."
        )
    kind = ModelUnavailableError if status >= 500 else ModelResponseError
    return kind(f"{where} answered {status}: {detail}")


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ModelRateLimitError | ModelUnavailableError)


class ChatModelCaller:
    """Calls a LangChain chat model for a draft, with retries for retryable failures.

    Args:
        model: Any LangChain chat model that supports ``bind_tools``.
        base_url: Where the model lives, named in error messages.
        max_retries: Retries after the first attempt for rate limits and unavailability.
        initial_backoff: Seconds before the first retry.
        max_backoff: Upper bound of any wait, including a server's Retry-After.
        multiplier: Growth of the wait between retries.
        secrets: Values to scrub from any error text (the API key).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        base_url: str = "",
        max_retries: int = 3,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        multiplier: float = 1.5,
        secrets: Sequence[str] = (),
    ) -> None:
        self.model = model
        self.base_url = base_url or str(getattr(model, "openai_api_base", "") or "the model")
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.multiplier = multiplier
        self._secrets = tuple(secrets)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = getattr(exc, "retry_after", None)
        if hinted is not None:
            return float(min(hinted, self.max_backoff))
        wait = self.initial_backoff * self.multiplier ** (state.attempt_number - 1)
        return float(min(wait, self.max_backoff))

    async def aclose(self) -> None:
        """Close the model's own HTTP client, if it has one."""
        client = getattr(self.model, "http_async_client", None)
        if client is not None:
            await client.aclose()

    async def __call__(self, messages: list[Message], tools: list[dict[str, Any]]) -> ModelReply:
        runnable: Any = self.model.bind_tools(tools) if tools else self.model
        lc_messages = to_langchain(messages)
        turn = sum(1 for m in messages if m["role"] == "assistant")
        started = time.perf_counter()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                try:
                    reply = await runnable.ainvoke(lc_messages)
                except ModelError:
                    raise
                except Exception as exc:
                    raise classify_model_error(
                        exc, base_url=self.base_url, secrets=self._secrets
                    ) from None
        return ModelReply(
            message=from_langchain(reply, turn=turn),
            usage=usage_of(reply),
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )
