"""The model server's settings: where it is, how long to wait, what to ask for (spec 5.3, 6.4.3).

`ModelBackendSettings.get_headers` is the one place the API key is read for use.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator

from ai_agent.config.section import BAD_SECRET_CHARS, HTTP_URL, Section

__all__ = ["ModelBackendSettings"]


class ModelBackendSettings(Section):
    """Connection to an OpenAI-compatible model server (spec 5.3, 6.4.3).

    The generation parameters left at ``None`` are not sent, so the server's defaults apply.

    Examples:
        >>> backend = ModelBackendSettings(api_key="sk-example", temperature=0.2)
        >>> backend.api_key
        SecretStr('**********')
        >>> backend.generation_params()
        {'temperature': 0.2}
    """

    base_url: str = Field(
        default="http://localhost:11434/v1",
        description="Base URL of the OpenAI-compatible API; trailing slashes are removed.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key for authenticated endpoints; empty means none."
    )
    model: str = Field(default="llama3.2", min_length=1, description="Model identifier.")
    timeout: float = Field(default=30.0, gt=0, description="Request timeout in seconds.")
    total_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Longest one attempt of a model call may take, a streamed reply included; "
        "past it the attempt is a timeout, retried like any other.",
    )
    idle_timeout: float | None = Field(
        default=None,
        gt=0,
        description="Longest wait for the next part of a streamed reply; past it the attempt "
        "is a timeout, retried like any other. Unset: the request timeout.",
    )
    max_retries: int = Field(default=3, ge=0, description="Retry attempts for failed requests.")
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="Sampling temperature; unset: the server's default."
    )
    max_tokens: int | None = Field(
        default=None, gt=0, description="Most tokens in one reply; unset: the server's default."
    )
    top_p: float | None = Field(
        default=None, ge=0, le=1, description="Nucleus sampling; unset: the server's default."
    )
    seed: int | None = Field(
        default=None, description="Sampling seed, for servers that honour one."
    )
    context_window: int | None = Field(
        default=None, gt=0, description="The model's context window in tokens, when known."
    )
    max_response_chars: int = Field(
        default=1_000_000,
        gt=0,
        description="Size cap of one reply (text plus tool-call arguments); larger is an error.",
    )
    media_inputs: list[Literal["image", "audio"]] = Field(
        default_factory=list,
        description="Media the model reads as content parts: images (PNG, JPEG, GIF, WebP) "
        "and audio (WAV, MP3) that tools return reach it in the OpenAI chat format; "
        "empty: a one-line text description of each instead.",
    )
    max_media_bytes: int = Field(
        default=1_000_000,
        ge=0,
        description="Largest image or audio clip (decoded bytes) sent to the model as a part; "
        "a larger one reaches it as its text description.",
    )

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        try:
            HTTP_URL.validate_python(value)
        except ValidationError:
            raise ValueError(
                "must be an http:// or https:// URL, such as http://localhost:11434/v1"
            ) from None
        return value.rstrip("/")

    @field_validator("api_key", mode="before")
    @classmethod
    def _check_api_key(cls, value: object) -> object:
        # Runs on the raw input, so the check never needs to unwrap a SecretStr built from it.
        # The error text names the rule, never the value.
        if isinstance(value, str):
            value = value.strip()
            if not value:
                return None
            if BAD_SECRET_CHARS.search(value):
                raise ValueError("must not contain spaces, line breaks or control characters")
        return value

    def get_headers(self) -> dict[str, str]:
        """HTTP headers for a request to the backend.

        This is the one place the API key is unwrapped; pass the result straight to the HTTP
        client and never log it.

        Returns:
            ``{"Authorization": "Bearer <key>"}`` when a key is set, else an empty dict.

        Examples:
            >>> ModelBackendSettings().get_headers()
            {}
        """
        if self.api_key is None:
            return {}
        return {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}

    def generation_params(self) -> dict[str, float | int]:
        """The generation parameters that are set, ready for a chat-completions request.

        Examples:
            >>> ModelBackendSettings(max_tokens=256, seed=7).generation_params()
            {'max_tokens': 256, 'seed': 7}
        """
        params: dict[str, float | int | None] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "seed": self.seed,
        }
        return {name: value for name, value in params.items() if value is not None}
