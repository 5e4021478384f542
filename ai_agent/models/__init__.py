"""The model: the chat backend, calling it, and what ``Agent(model=...)`` accepts.

One module per concern: ``backend`` (ChatOpenAI for any OpenAI-compatible server, from settings),
``messages`` (the run's JSON messages to and from LangChain's, the request hash), ``errors``
(client exceptions mapped onto the engine's error tree), ``caller`` (`ChatModelCaller`:
streaming, deadlines, retries, the breaker), ``resilience`` (`RetryPolicy`, `CircuitBreaker`,
tool retries) and ``resolve`` (a model argument made into a caller, the local server started for
it). The local server itself is `ai_agent.local` (the ``local`` extra), imported by ``resolve``
only when the ``local`` backend is asked for.

The names are imported on first use (PEP 562): ``ai_agent.models.resilience`` is imported by the
tools, which must not load LangChain for it.

Examples:
    >>> from ai_agent.models import ChatModelCaller
    >>> from ai_agent.testing import ScriptedModel
    >>> import asyncio
    >>> caller = ChatModelCaller(ScriptedModel(["hello"]), max_retries=0)
    >>> asyncio.run(caller([{"role": "user", "content": "hi"}], []))["message"]["content"]
    'hello'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
    from ai_agent.models.backend import make_chat_model
    from ai_agent.models.caller import DEFAULT_MAX_RESPONSE_CHARS, ChatModelCaller
    from ai_agent.models.errors import classify_model_error
    from ai_agent.models.messages import (
        from_langchain,
        request_hash,
        to_langchain,
        usage_of,
        wire_messages,
    )

__all__ = [
    "DEFAULT_MAX_RESPONSE_CHARS",
    "ChatModelCaller",
    "classify_model_error",
    "from_langchain",
    "make_chat_model",
    "request_hash",
    "to_langchain",
    "usage_of",
    "wire_messages",
]

_HOMES = {
    "DEFAULT_MAX_RESPONSE_CHARS": "ai_agent.models.caller",
    "ChatModelCaller": "ai_agent.models.caller",
    "classify_model_error": "ai_agent.models.errors",
    "from_langchain": "ai_agent.models.messages",
    "make_chat_model": "ai_agent.models.backend",
    "request_hash": "ai_agent.models.messages",
    "to_langchain": "ai_agent.models.messages",
    "usage_of": "ai_agent.models.messages",
    "wire_messages": "ai_agent.models.messages",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
