"""What ``Agent(model=...)`` accepts, made into the caller a run uses.

- a LangChain chat model (``ScriptedModel``, ``FunctionModel``, any ``BaseChatModel``): called
  as it is;
- ``"scripted:PATH"``: a ``ScriptedModel`` read from the JSON script at PATH, read when the Agent
  is built (`read_model_argument`), so a bad file is a usage error and not a failed run;
- any other string: a model id on the configured server (``model_backend`` with that ``model``);
- ``None``: ``model_backend`` as configured.

With the ``local`` backend the built-in llama.cpp server (`ai_agent.local`, the ``local``
extra) is started first and the model is the one it serves. `ai_agent.testing` and
`ai_agent.local` are imported here, and only when a model asks for them: the rest of the
engine imports neither.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from ai_agent.errors import ConfigError
from ai_agent.events import ProgressEvent, _BackendNotice
from ai_agent.models.backend import make_chat_model
from ai_agent.models.caller import ChatModelCaller
from ai_agent.models.resilience import CircuitBreaker, RetryPolicy

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings, ModelBackendSettings
    from ai_agent.local import LocalModelServer
    from ai_agent.observability.httplog import HttpLog
    from ai_agent.observability.redaction import SecretValues

__all__ = [
    "BACKENDS",
    "BackendName",
    "ResolvedModel",
    "caller_for",
    "check_backend",
    "read_model_argument",
    "resolve_model",
    "summary_caller",
]

BackendName = Literal["openai", "local"]
BACKENDS: tuple[BackendName, ...] = ("openai", "local")
_SCRIPTED = "scripted:"


def check_backend(name: str) -> BackendName:
    """``name`` if it is a backend the engine has, else a ConfigError listing them.

    Examples:
        >>> check_backend("local")
        'local'
    """
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; use 'openai' or 'local'")
    return name


def read_model_argument(model: BaseChatModel | str | None) -> BaseChatModel | str | None:
    """The ``model`` argument with a ``"scripted:PATH"`` script read now; others as given.

    Raises:
        ConfigError: the script file is missing, not JSON, or not a script.
    """
    if isinstance(model, str) and model.startswith(_SCRIPTED):
        from ai_agent.testing import ScriptedModel

        return ScriptedModel.from_file(model.removeprefix(_SCRIPTED))
    return model


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """The caller of an Agent's model, and what was set up for it.

    Attributes:
        caller: Calls the model (retries, breaker, streaming).
        backend: The server's settings when the engine made the client (a model id, or the
            configured one); None for a chat model given as it is.
        local: The local server started for it, which its owner stops when it closes.
    """

    caller: ChatModelCaller
    backend: ModelBackendSettings | None = None
    local: LocalModelServer | None = None


async def resolve_model(
    model: BaseChatModel | str | None,
    *,
    backend: BackendName,
    settings: AgentSettings,
    secrets: SecretValues,
    http_log: HttpLog | None = None,
    on_event: Callable[[ProgressEvent], None] | None = None,
) -> ResolvedModel:
    """The caller for ``model`` (read by `read_model_argument`) on ``backend``.

    Args:
        model: A chat model, a model id, or None for the configured one.
        backend: ``"openai"`` (the configured server) or ``"local"`` (started here).
        settings: Retries, breaker, streaming and the server's settings.
        secrets: Scrubbed from error text; the local server's key is added to them.
        http_log: Logs each request of a client made here.
        on_event: Hears the local server's progress (its notices).

    Raises:
        LocalBackendError: the local server could not be started.
    """
    if isinstance(model, BaseChatModel):
        name = str(getattr(model, "openai_api_base", "") or f"the {model._llm_type} model")
        caller = caller_for(model, settings.model_backend, settings, secrets, base_url=name)
        return ResolvedModel(caller)
    server = settings.model_backend
    if isinstance(model, str):
        server = server.model_copy(update={"model": model})
    # The client is made in a thread: its packages (langchain_openai, openai's resources,
    # httpcore...) are imported on first use, a second or more, and the event loop must go on
    # meanwhile (another run's heartbeat and timeouts, the console's pages, a cancellation).
    if backend != "local":
        caller = await asyncio.to_thread(_caller_on, server, settings, secrets, http_log)
        return ResolvedModel(caller, server)
    local = await _start_local(on_event)
    try:
        secrets.add(local.api_key)
        server = _on_local(server, local)
        caller = await asyncio.to_thread(_caller_on, server, settings, secrets, http_log)
        return ResolvedModel(caller, server, local)
    except BaseException:
        await local.stop()
        raise


def caller_for(
    model: BaseChatModel,
    backend: ModelBackendSettings,
    settings: AgentSettings,
    secrets: SecretValues,
    *,
    base_url: str,
) -> ChatModelCaller:
    """A caller with the settings' retry policy, a breaker for this backend, streaming."""
    retry = settings.retry
    policy = RetryPolicy.for_models(retry)
    overridden = retry.model_max_retries is not None or retry.max_attempts is not None
    if not overridden and "max_retries" in backend.model_fields_set:
        # An explicit backend max_retries wins over the level's default count.
        policy = dataclasses.replace(policy, max_retries=backend.max_retries)
    return ChatModelCaller(
        model,
        base_url=base_url,
        retry=policy,
        breaker=CircuitBreaker(
            base_url,
            threshold=retry.circuit_breaker_threshold,
            cooldown=retry.circuit_breaker_timeout,
        ),
        stream=settings.streaming.stream_model_responses,
        max_response_chars=backend.max_response_chars,
        secrets=secrets,
        total_timeout=backend.total_timeout,
        idle_timeout=backend.idle_timeout or backend.timeout,
    )


def _caller_on(
    backend: ModelBackendSettings,
    settings: AgentSettings,
    secrets: SecretValues,
    http_log: HttpLog | None,
) -> ChatModelCaller:
    """A caller of a ChatOpenAI client for ``backend``."""
    model = make_chat_model(backend, http_log=http_log)
    return caller_for(model, backend, settings, secrets, base_url=backend.base_url)


def summary_caller(
    backend: ModelBackendSettings,
    model: str,
    settings: AgentSettings,
    secrets: SecretValues,
    http_log: HttpLog | None = None,
) -> ChatModelCaller:
    """A caller of another model on the same server (``context.summarization_model``)."""
    return _caller_on(backend.model_copy(update={"model": model}), settings, secrets, http_log)


async def _start_local(on_event: Callable[[ProgressEvent], None] | None) -> LocalModelServer:
    from ai_agent.local import LocalModelServer

    emit = on_event or _ignore
    local = LocalModelServer(progress=lambda message: emit(_BackendNotice(message)))
    emit(_BackendNotice("starting the local llama.cpp server"))
    await local.start()  # a failed or cancelled start leaves nothing running
    return local


def _on_local(backend: ModelBackendSettings, local: LocalModelServer) -> ModelBackendSettings:
    # The server requires a per-start random key (so no web page can use it); it is a secret
    # like any other and is scrubbed from error text.
    return backend.model_copy(
        update={
            "base_url": local.base_url,
            "model": local.model_id,
            "api_key": SecretStr(local.api_key),
            "temperature": backend.temperature or 0.0,
            "seed": backend.seed if backend.seed is not None else 42,
        }
    )


def _ignore(event: ProgressEvent) -> None:
    """No listener."""
