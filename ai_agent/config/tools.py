"""How tools run: limits of every call, and each built-in tool's own section (spec 5.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationError, field_validator

from ai_agent.config.section import HTTP_URL, Section, check_import_path

__all__ = [
    "BashToolConfig",
    "FileToolsConfig",
    "NotesConfig",
    "ToolConfig",
    "ToolsmakerConfig",
    "WebSearchConfig",
]


def _extensions(values: list[str]) -> list[str]:
    out = []
    for value in values:
        ext = value.strip().lower()
        if not ext or ext in (".", "*"):
            raise ValueError("extensions look like '.py' or 'py'")
        out.append(ext if ext.startswith(".") else "." + ext)
    return out


class FileToolsConfig(Section):
    """The file, glob and grep tools (spec 5.4.1-5.4.3).

    ``sandbox`` keeps every path inside ``base_dir`` (the Agent's working directory when unset),
    after symlinks are resolved, at the moment of use. Extensions are matched case-insensitively;
    an empty ``allowed_extensions`` allows any extension not denied.

    Examples:
        >>> FileToolsConfig(denied_extensions=["PEM", ".key"]).denied_extensions
        ['.pem', '.key']
    """

    sandbox: bool = Field(
        default=True,
        description="Keep every path inside base_dir, after symlinks, at the moment of use.",
    )
    base_dir: Path | None = Field(
        default=None, description="Root of the file sandbox; unset: the Agent's working directory."
    )
    max_read_bytes: int = Field(
        default=1_000_000,
        gt=0,
        description="Largest file read_file reads; grep searches a larger file a block at a time, "
        "and a longer line in pieces of this many characters.",
    )
    allowed_extensions: list[str] = Field(
        default_factory=list,
        description="Only these extensions may be read or written; empty: any not denied.",
    )
    denied_extensions: list[str] = Field(
        default_factory=list, description="Extensions never read or written (.pem, .key...)."
    )
    max_results: int = Field(default=200, gt=0, description="Result limit of glob and grep.")
    absolute_paths: bool = Field(default=False, description="glob/grep report absolute paths.")
    respect_gitignore: bool = Field(
        default=True, description="glob and grep skip what .gitignore files ignore."
    )
    allow_hard_links: bool = Field(
        default=False,
        description="Read files that have more than one hard link (another name, possibly "
        "outside base_dir); off: such files are refused.",
    )

    @field_validator("allowed_extensions", "denied_extensions")
    @classmethod
    def _check_extensions(cls, value: list[str]) -> list[str]:
        return _extensions(value)


class BashToolConfig(Section):
    """The ``run_bash`` tool (spec 5.4.4).

    ``allow``/``deny`` name programs (``git``, ``rm``); they are checked on every command of the
    parsed command line. ``sandbox="bwrap"`` runs commands under bubblewrap: only the file tools'
    base directory is writable, there is no network, the rest of the system is read-only, and
    the engine's own state is hidden. ``sandbox="none"`` hides nothing from a command. In both
    modes a command gets the process, memory and CPU limits below, and dies with the engine.

    Examples:
        >>> BashToolConfig(allow=["ls", "git"]).allow
        ['ls', 'git']
    """

    allow: list[str] = Field(default_factory=list, description="Empty: any program.")
    deny: list[str] = Field(
        default_factory=list,
        description="Programs never run, checked on every command of the parsed line.",
    )
    confirm_destructive: bool = Field(
        default=True,
        description="Destructive commands (rm, dd, git reset --hard...) wait for a person.",
    )
    sandbox: Literal["none", "bwrap"] = Field(
        default="none",
        description="bwrap: run commands under bubblewrap (system read-only, base_dir writable, no "
        "network); none: no OS sandbox.",
    )
    max_timeout: float = Field(default=600.0, gt=0, description="Cap of a call's timeout (s).")
    max_output_bytes: int = Field(default=100_000, gt=0, description="Per stream.")
    pass_env: list[str] = Field(
        default_factory=list,
        description="Secret-looking environment variables to pass to commands anyway.",
    )
    readonly_paths: list[Path] = Field(
        default_factory=list, description="Extra paths visible (read-only) inside the sandbox."
    )
    max_processes: int = Field(
        default=256,
        gt=0,
        description="Processes and threads a command may have at once: a pids cgroup of the "
        "call's own, which binds root too, where the engine may make one; otherwise "
        "RLIMIT_NPROC, which root escapes (the tool then says the limit is not enforced).",
    )
    memory_mb: int = Field(
        default=4096,
        gt=0,
        description="Memory of each process of a command, in MiB (RLIMIT_DATA: heap and other "
        "private writable memory).",
    )
    cpu_seconds: int | None = Field(
        default=None,
        gt=0,
        description="CPU seconds of each process of a command (RLIMIT_CPU); unset: the call's "
        "timeout.",
    )


class WebSearchConfig(Section):
    """The ``web_search`` tool (spec 5.4.5).

    ``url`` is the SearXNG instance; the hosted backends read their key from the environment
    variable ``api_key_env`` (default ``TAVILY_API_KEY``, ``BRAVE_API_KEY`` or
    ``SERPAPI_API_KEY``), never from a file.

    Examples:
        >>> WebSearchConfig(backend="brave").backend
        'brave'
    """

    backend: Literal["searxng", "tavily", "brave", "serpapi"] = Field(
        default="searxng", description="searxng, tavily, brave or serpapi."
    )
    url: str = Field(
        default="http://localhost:8888",
        description="The SearXNG instance (it must allow JSON output).",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding a hosted backend's key; unset: TAVILY_API_KEY, "
        "BRAVE_API_KEY or SERPAPI_API_KEY.",
    )
    timeout: float = Field(default=15.0, gt=0, description="Seconds one search request may take.")
    rate_limit_per_minute: int = Field(default=30, ge=0, description="0: no limit.")
    max_wait_seconds: float = Field(
        default=10.0, ge=0, description="Longest wait for a rate-limit slot before the call fails."
    )
    cache_ttl_seconds: float = Field(default=0.0, ge=0, description="0: no cache.")
    max_results: int = Field(default=20, gt=0, description="Most results one search returns.")

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        try:
            HTTP_URL.validate_python(value)
        except ValidationError:
            raise ValueError("must be an http:// or https:// URL") from None
        return value.rstrip("/")


class NotesConfig(Section):
    """The notes tools ``find_similar`` and ``read_note`` (notes-assistant flow).

    ``embedding`` is an import path (``package.module:function``) of ``fn(texts) -> vectors``;
    without one, a lexical (BM25) ranker is used. ``generated_queries``: the search queries are
    the model's (written in its ``find_similar`` call, at most ``max_queries``); off, the
    person's question itself is searched.

    Examples:
        >>> NotesConfig().mmr_lambda, NotesConfig().min_chunk_chars
        (0.5, 160)
    """

    folder: Path | None = Field(
        default=None, description="Folder of Markdown notes; unset: the file sandbox's base."
    )
    k: int = Field(
        default=20,
        gt=0,
        le=100,
        description="Results find_similar returns when the call does not say.",
    )
    mmr_lambda: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Relevance against diversity when picking results (maximal marginal "
        "relevance).",
    )
    min_chunk_chars: int = Field(
        default=160, ge=0, description="Chunks shorter than this are ranked lower."
    )
    chunk_chars: int = Field(
        default=1200, ge=200, description="Target size of a chunk of a note's section."
    )
    read_max_chars: int = Field(
        default=4000, gt=0, description="Most characters read_note returns in one call."
    )
    embedding: Annotated[str, AfterValidator(check_import_path)] | None = Field(
        default=None, description="Import path of fn(texts) -> vectors; unset: BM25 ranking."
    )
    generated_queries: bool = Field(
        default=True,
        description="find_similar searches the queries the model wrote in its call (at most "
        "max_queries); off: it searches the person's question as asked.",
    )
    max_queries: int = Field(
        default=3,
        ge=1,
        le=3,
        description="Queries one find_similar call searches; the model is told of any it dropped.",
    )


class ToolsmakerConfig(Section):
    """Generated tools (the toolsmaker): where they are kept and how each call is confined.

    Every call of a generated tool runs in its own bubblewrap sandbox; these are its limits.
    ``dir`` and ``audit_path`` are relative to the working directory, like ``checkpoint_path``;
    ``Agent(toolsmaker_dir=..., toolsmaker_audit_path=...)`` overrides them.

    Example:
        >>> ToolsmakerConfig().dir.as_posix(), ToolsmakerConfig().memory_mb
        ('.agents/toolsmaker', 512)
    """

    dir: Path = Field(
        default=Path(".agents/toolsmaker"),
        description="Where generated tools, their records, reviews and audit log are kept.",
    )
    audit_path: Path | None = Field(default=None, description="Default: dir/audit.jsonl.")
    timeout: float = Field(default=30.0, gt=0, description="Wall seconds per call.")
    cpu_seconds: int | None = Field(default=None, gt=0, description="Default: the timeout.")
    memory_mb: int = Field(default=512, ge=64, description="Address space of the tool process.")
    max_processes: int = Field(
        default=64,
        gt=0,
        description="Processes and threads at once (besides seccomp's ban on new ones): a pids "
        "cgroup of the call's own where the engine may make one, otherwise RLIMIT_NPROC, "
        "which root escapes.",
    )
    file_size_mb: int = Field(default=16, ge=0, description="Largest file it may write.")
    tmp_mb: int = Field(default=16, ge=0, description="Size of its private /tmp (0: none).")
    max_output_bytes: int = Field(default=1_000_000, gt=0, description="Bytes read per call.")
    max_response_bytes: int = Field(default=1_000_000, gt=0, description="Per HTTP response.")
    max_redirects: int = Field(
        default=5, ge=0, description="Redirects the HTTP broker follows (each host checked)."
    )


class ToolConfig(Section):
    """How tools run: limits for every tool, and the built-in tools' own settings.

    Examples:
        >>> ToolConfig().timeout, ToolConfig().max_output_chars
        (30.0, 12000)
    """

    timeout: float = Field(default=30.0, gt=0, description="Seconds a tool call may take.")
    max_output_chars: int = Field(
        default=12_000,
        ge=200,
        description="Longer tool outputs are summarized (output_summary) before the model sees "
        "them; the full text stays in the run store.",
    )
    output_summary: Literal["extractive", "clip", "model"] = Field(
        default="extractive",
        description="How a tool output over max_output_chars is shortened: extractive (its first "
        "and last lines and its lines richest in rare words, in order, under a header saying "
        "so), clip (its head and tail) or model (one more model call writes it, recorded and "
        "counted in usage and budget; extractive, saying why, when that call fails).",
    )
    output_summary_timeout: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds the model may take to write a summary (output_summary=model); "
        "a slower one is not waited for and the summary is extractive.",
    )
    output_summary_input_chars: int = Field(
        default=24_000,
        ge=1000,
        le=1_000_000,
        description="The most of an output the model is sent to summarize (output_summary="
        "model): a longer one is sent as its head and tail.",
    )
    max_result_chars: int = Field(
        default=10_000_000,
        ge=1000,
        description="The largest result a tool may return (characters of its JSON form): a "
        "larger one is not kept; the call ends as an error result (OUTPUT_TOO_LARGE) the model "
        "sees.",
    )
    first_use_gate: bool = Field(
        default=True, description="The first call of each external tool in a run waits."
    )
    max_concurrent_calls: int = Field(
        default=4,
        ge=1,
        le=64,
        description="How many calls of tools that may run at once (subagents) run together in "
        "one cycle; the others run one after another, as all do under a token or cost budget "
        "(each child is held to what the ones before it left).",
    )
    files: FileToolsConfig = Field(default_factory=FileToolsConfig)
    bash: BashToolConfig = Field(default_factory=BashToolConfig)
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    notes: NotesConfig = Field(default_factory=NotesConfig)
    toolsmaker: ToolsmakerConfig = Field(default_factory=ToolsmakerConfig)
