"""The built-in local model backend: a real llama.cpp server with a small model, zero config.

Install with ``pip install 'ai-agent[local]'`` (or ``uv sync --extra local``). Importing this
package loads neither ``xllamacpp`` nor the model; `LocalModelServer` does that when it
starts, in a child process.

The example of use is `LocalModelServer`'s.

Modules:
    model_files: `ensure_model`, the verified download of the GGUF into the user cache.
    pypi: the index lookup and digest-checked wheel download it uses.
    gguf_header: reads one metadata string from a GGUF file.
    chat_template: the model's template, adapted so the server returns real tool calls.
    server: `LocalModelServer`, the parent side.
    serve: the child process that hosts llama.cpp.
"""

from __future__ import annotations

from ai_agent.local.chat_template import (
    adapt_chat_template,
    read_chat_template,
    server_chat_template,
)
from ai_agent.local.model_files import (
    QWEN25_CODER_05B,
    ModelSpec,
    WheelPart,
    default_cache_dir,
    ensure_model,
)
from ai_agent.local.server import LocalModelServer

__all__ = [
    "QWEN25_CODER_05B",
    "LocalModelServer",
    "ModelSpec",
    "WheelPart",
    "adapt_chat_template",
    "default_cache_dir",
    "ensure_model",
    "read_chat_template",
    "server_chat_template",
]
