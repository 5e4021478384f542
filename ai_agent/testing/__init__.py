"""Test doubles that ship with the package: fake chat models and a mock OpenAI-compatible server.

- `ScriptedModel` / `FunctionModel`: LangChain chat models that answer from a script
  or a function, in-process (no HTTP).
- `MockOpenAIServer`: a real HTTP server on 127.0.0.1 speaking ``/v1/chat/completions``,
  with scripted `Reply` items and `Fault` items (429, 500, 503, hang, cut stream,
  malformed tool arguments...), for exercising the real client end to end.

Examples:
    >>> from ai_agent.testing import MockOpenAIServer, ScriptedModel
    >>> ScriptedModel(["hi"]).invoke("hello").content
    'hi'
"""

from ai_agent.testing._fakes import FunctionModel, ScriptedModel, Turn
from ai_agent.testing.server import Fault, MockOpenAIServer, RecordedRequest, Reply

__all__ = [
    "Fault",
    "FunctionModel",
    "MockOpenAIServer",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "Turn",
]
