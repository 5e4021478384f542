"""How a typed run asks for its final answer (``Agent(output_type=...)``, docs/typed-outputs.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ai_agent.config.section import Section

__all__ = ["OutputConfig"]


class OutputConfig(Section):
    """The structured final answer of a run with an output type.

    ``mode`` says how the answer is asked for once the tool turns are over: ``native`` sends
    the schema as the request's ``response_format`` (``{"type": "json_schema", ...}``; llama.cpp,
    vLLM, Ollama, LM Studio and OpenAI take it), ``tool`` offers a ``final_answer`` tool whose
    arguments are the answer, for a server that refuses ``response_format``. It is a setting
    rather than a probe: a server may accept the field and ignore it, so no answer tells the two
    kinds apart, and a refusal is a MODEL_ERROR issue whose message names this setting.

    Examples:
        >>> OutputConfig().mode, OutputConfig().max_retries
        ('native', 2)
    """

    mode: Literal["native", "tool"] = Field(
        default="native",
        description="How the typed final answer is asked for: the request's response_format "
        "(native) or a final_answer tool (tool).",
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Times an answer that does not fit the output type goes back to the model "
        "with its errors before the run pauses at the gate (OUTPUT_INVALID).",
    )
