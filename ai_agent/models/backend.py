"""The chat model of any OpenAI-compatible ``/v1/chat/completions`` server, from settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ai_agent.config import ModelBackendSettings
    from ai_agent.observability.httplog import HttpLog

__all__ = ["make_chat_model"]


def make_chat_model(
    backend: ModelBackendSettings, *, http_log: HttpLog | None = None
) -> BaseChatModel:
    """A ChatOpenAI for the configured OpenAI-compatible server.

    Retries are ours (``ChatModelCaller``), so the client's own are off; usage is requested when
    streaming because langchain-openai turns it off whenever ``base_url`` is set. The model gets
    its own HTTP clients (langchain-openai otherwise shares one process-wide client, whose pooled
    connections outlive the event loop they were made on); ``ChatModelCaller.aclose`` closes them.

    Args:
        backend: The server, model and generation settings.
        http_log: Event hooks that log each request (method, URL, status; headers and bodies at
            DEBUG). See `ai_agent.observability.httplog.HttpLog`.
    """
    import httpx
    from langchain_openai import ChatOpenAI

    key = backend.api_key.get_secret_value() if backend.api_key is not None else "not-needed"
    # No pooled keep-alive connections: an Agent may drive runs on several event loops
    # (run_sync, stream), and a pooled connection belongs to the loop that opened it. A local
    # server answers in seconds; one TCP handshake per call costs nothing next to that.
    limits = httpx.Limits(max_keepalive_connections=0)
    params: dict[str, Any] = {
        "base_url": backend.base_url,
        "api_key": key,
        "model": backend.model,
        "timeout": backend.timeout,
        "max_retries": 0,
        "use_responses_api": False,
        "stream_usage": True,
        # ChatModelCaller's limits (total_timeout, idle_timeout) govern a streamed reply, with
        # retryable errors; the client's own per-part limit would be a second, fixed one.
        "stream_chunk_timeout": None,
        "http_client": httpx.Client(
            limits=limits,
            timeout=backend.timeout,
            event_hooks=http_log.sync_event_hooks() if http_log else None,
        ),
        "http_async_client": httpx.AsyncClient(
            limits=limits,
            timeout=backend.timeout,
            event_hooks=http_log.event_hooks() if http_log else None,
        ),
    }
    for name in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(backend, name, None)
        if value is not None:
            params[name] = value
    return ChatOpenAI(**params)
