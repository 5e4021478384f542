r"""The chat template the local server uses, derived from the model's own.

Why change it: with Qwen2.5-Coder-0.5B's own template the model answers a tool request with bare
JSON, and the server returns it as text, not as ``tool_calls``. This llama.cpp build picks its
tool-call parser from how the template renders an assistant's tool call, so the instruction to the
model and that rendering have to agree. Measured with ``use_jinja=True``:

* calls rendered as ``<tool_call>{...}</tool_call>`` (the original): the model writes bare JSON or a
  fenced block, neither is parsed;
* calls rendered as a fenced block, and the model asked for one:

      ```json
      {"name": "get_weather", "arguments": {"city": "Paris"}}
      ```

  the server returns real ``tool_calls``, streamed and not streamed.

After tool results the model tends to call the same tool again; a system turn after the results
("do not call the same tool again, answer in plain text") stopped that in each case tried, where
the same words inside the user turn did not.

How it is shipped: a pure, deterministic transformation (`adapt_chat_template`) applied to
the template read from the GGUF file at start, rather than a copy of a template in the package.
The GGUF stays the single source of the rest of the template, every edit is anchored on exact
text that must occur once (anything else raises, so a different model fails loudly instead of
silently losing tool calls), and the tests pin the input and output digests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ai_agent.errors import LocalBackendError
from ai_agent.local.gguf_header import GGUFFormatError, read_gguf_string

__all__ = ["adapt_chat_template", "read_chat_template", "server_chat_template"]

_TEMPLATE_KEY = "tokenizer.chat_template"


@dataclass(frozen=True, slots=True)
class _Edit:
    why: str
    old: str
    new: str


# Template source text: "\n" below is the two characters backslash-n inside Jinja string literals,
# hence the raw strings.
_EDITS = (
    _Edit(
        why="ask for the fenced json block that the server parses into tool_calls",
        old=(
            r"For each function call, return a json object with function name and arguments "
            r"within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            r"{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
            r"</tool_call><|im_end|>\n"
        ),
        new=(
            r"To call a function, reply with only a json object with the function name and "
            r"arguments in a fenced json block:\n```json\n"
            r"{\"name\": <function-name>, \"arguments\": <args-json-object>}\n```<|im_end|>\n"
        ),
    ),
    _Edit(
        why="render past calls the same way, which is what the server's parser is built from",
        old=r"""'\n<tool_call>\n{"name": "'""",
        new=r"""'\n```json\n{"name": "'""",
    ),
    _Edit(
        why="close the fenced block instead of the XML tag",
        old=r"""'}\n</tool_call>'""",
        new=r"""'}\n```'""",
    ),
    _Edit(
        why="after the last tool result, tell the model to answer rather than call again",
        old=(
            '{%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
            r"            {{- '<|im_end|>\n' }}"
        ),
        new=(
            '{%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
            r"            {{- '<|im_end|>\n<|im_start|>system\nThe tool returned the result "
            r"above. Do not call the same tool again. Answer the user in plain text using "
            r"this result.<|im_end|>\n' }}"
        ),
    ),
)


def adapt_chat_template(template: str) -> str:
    """Turn a Qwen2.5 chat template into one whose tool calls the local server parses.

    Args:
        template: The model's own Jinja chat template.

    Returns:
        The template with tool calls requested and rendered as fenced json blocks, and a
        "do not call the same tool again" turn after tool results.

    Raises:
        LocalBackendError: The template is not the Qwen2.5 one these edits are written for.

    Examples:
        >>> adapt_chat_template("{{ messages }}")
        Traceback (most recent call last):
        ...
        ai_agent.errors.LocalBackendError: the model's chat template is not the Qwen2.5 template...
    """
    adapted = template
    for edit in _EDITS:
        count = adapted.count(edit.old)
        if count != 1:
            raise LocalBackendError(
                "the model's chat template is not the Qwen2.5 template this backend adapts "
                f"(expected one occurrence of the text to {edit.why}, found {count}); use the "
                "default model (unset AI_AGENT_MODEL_PATH) or pass chat_template= to "
                "LocalModelServer"
            )
        adapted = adapted.replace(edit.old, edit.new)
    return adapted


def read_chat_template(model_path: Path) -> str:
    """Read the chat template stored in a GGUF file's metadata.

    Args:
        model_path: The GGUF file.

    Returns:
        The value of its ``tokenizer.chat_template`` field.

    Raises:
        LocalBackendError: The file cannot be read as GGUF or has no chat template.
    """
    try:
        template = read_gguf_string(model_path, _TEMPLATE_KEY)
    except (OSError, GGUFFormatError) as exc:
        raise LocalBackendError(
            f"cannot read the chat template of {model_path} ({exc}); point "
            "AI_AGENT_MODEL_PATH at a GGUF model or unset it"
        ) from exc
    if template is None:
        raise LocalBackendError(
            f"{model_path} has no {_TEMPLATE_KEY}; pass chat_template= to LocalModelServer"
        )
    return template


def server_chat_template(model_path: Path) -> str:
    """Return the adapted chat template for a model file.

    Args:
        model_path: The GGUF file.

    Returns:
        `adapt_chat_template` applied to the file's own template.

    Raises:
        LocalBackendError: See `read_chat_template` and `adapt_chat_template`.
    """
    return adapt_chat_template(read_chat_template(model_path))
