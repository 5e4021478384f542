"""The base of every settings section, and the checks and names several sections share."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, HttpUrl, TypeAdapter

__all__ = [
    "BAD_SECRET_CHARS",
    "BUILT_ON_FIRST_USE",
    "HTTP_URL",
    "ApprovalPolicyName",
    "Section",
    "ToolCategoryName",
    "check_import_path",
    "check_regex",
]

HTTP_URL: TypeAdapter[HttpUrl] = TypeAdapter(HttpUrl)
_IMPORT_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
# Whitespace or control characters in an API key would break (or inject into) the HTTP header.
BAD_SECRET_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")

# The config of a section the settings nest but a command rarely validates on its own (an MCP
# server, its auth, a model's rates): its own validator is built on first use, not at import
# (``ai-agent tools`` builds none of them). The settings build the schema they nest either way.
# Not for the sections every AgentSettings() makes with a default factory: those are validated at
# once, and deferring them made start-up slower, not faster (measured, issue 20). A subclass's
# model_config merges with Section's, so extra="forbid" and hidden inputs still hold.
BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)

ToolCategoryName = Literal["read_only", "note_taking", "modification", "external"]
ApprovalPolicyName = Literal["auto", "confirm", "approve", "deny"]


class Section(BaseModel):
    """Base of every settings section.

    Sections are plain models, not ``BaseSettings``: a nested ``BaseSettings`` would read the
    environment on its own, without the ``MAMBA_`` prefix. Unknown keys are errors so that typos in
    config files surface, and inputs are hidden from pydantic's error text so a secret given in the
    wrong place is never echoed. Numbers must be finite: TOML's ``inf`` and ``nan``, YAML's
    ``.inf`` and an environment value of ``inf`` would otherwise be read as a timeout, a lease or
    a price nobody meant (a JSON config file refuses them before they get here).
    """

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True, allow_inf_nan=False)


def check_regex(pattern: str) -> str:
    """A regular expression that compiles, or the ValueError that says why not."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return pattern


def check_import_path(path: str) -> str:
    """An import path such as ``package.module:Name``, or a ValueError.

    Only its form is checked: nothing is imported here.
    """
    if not _IMPORT_PATH.fullmatch(path):
        raise ValueError("must be an import path such as 'package.module:Collector'")
    return path
