"""Tests for ai_agent.config: sources and their order, validation, error text, secrets."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from ai_agent.config import (
    AgentSettings,
    CompactionConfig,
    ErrorRecoveryConfig,
    LoggingConfig,
    ModelBackendSettings,
    ObservabilityConfig,
    StreamingConfig,
    TokenizerConfig,
    load_settings,
)
from ai_agent.errors import ConfigError

CANARY = "sk-CANARY-7f3a9c"


@dataclass
class Dirs:
    project: Path
    home: Path

    def write(self, name: str, text: str) -> Path:
        path = self.project / name
        path.write_text(text, encoding="utf-8")
        return path

    def user_env(self, text: str) -> Path:
        path = self.home / "agents.env"
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    """A clean project directory and home: no real user file or MAMBA_ variable is read."""
    project = tmp_path / "config-project"
    home = tmp_path / "config-home"
    project.mkdir()
    home.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    for key in list(os.environ):
        if key.upper().startswith("MAMBA_"):
            monkeypatch.delenv(key)
    return Dirs(project=project, home=home)


def config_error(**kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(**kwargs)
    return str(info.value)


# --- defaults ------------------------------------------------------------------------------------


def test_defaults_match_the_spec() -> None:
    s = AgentSettings()
    assert s.backend == "openai"
    assert s.system_prompt == ""
    assert s.max_iterations == 10
    assert s.gate_profile == "default"
    assert s.gate_threshold is None
    assert s.effective_gate_threshold == 0.70
    assert s.execute_all_tool_calls is False
    assert s.checkpoint_path == Path(".agents/checkpoints.sqlite")
    assert s.memory_path == Path(".agents/memory.jsonl")
    assert s.memory_sqlite is False
    assert s.tools == []

    mb = s.model_backend
    assert (mb.base_url, mb.api_key, mb.model) == ("http://localhost:11434/v1", None, "llama3.2")
    assert (mb.timeout, mb.max_retries) == (30.0, 3)
    assert (mb.temperature, mb.max_tokens, mb.top_p, mb.seed) == (None, None, None, None)

    log = s.logging
    assert log.level == "INFO"
    assert (log.structured, log.include_request_body, log.include_response_body) == (
        False,
        False,
        False,
    )
    assert log.body_size_limit == 1024
    assert (log.include_correlation_id, log.redact_authorization, log.redact_api_keys) == (
        True,
        True,
        True,
    )
    assert log.sensitive_patterns == [r"password=\S+", r"secret=\S+"]

    assert s.observability == ObservabilityConfig(
        request_id_format="uuid4",
        propagate_trace_context=True,
        enable_otel_instrumentation=False,
        metrics_enabled=True,
        custom_collectors=[],
    )

    r = s.retry
    assert (r.retry_level, r.tool_max_retries, r.model_max_retries) == (2, None, None)
    assert (r.initial_backoff_seconds, r.max_backoff_seconds) == (1.0, 60.0)
    assert r.retryable_tool_errors == ["TimeoutError", "ConnectionError", "TemporaryFailure"]
    assert r.retryable_model_errors == ["RateLimitError", "ServiceUnavailable", "Timeout"]
    assert (r.circuit_breaker_threshold, r.circuit_breaker_timeout) == (5, 30.0)

    t = s.token_tracking
    assert (t.encoding, t.fallback_encoding) == ("cl100k_base", "cl100k_base")
    assert t.model_mapping == {"llama": "cl100k_base", "mistral": "cl100k_base"}
    assert (t.cache_tokenizer, t.count_special_tokens, t.safety_margin) == (True, True, 0.05)

    c = s.context
    assert c.strategy == "summarize_older"
    assert (c.trigger_threshold_tokens, c.target_tokens) == (100_000, 80_000)
    assert (c.preserve_recent_turns, c.preserve_system_prompt) == (10, True)
    assert c.summarization_model == "same"
    assert c.hybrid_weights == {
        "sliding_window": 0.2,
        "summarize_older": 0.5,
        "selective_pruning": 0.3,
    }

    assert s.streaming == StreamingConfig(
        stream_model_responses=True, stream_tool_results=True, chunk_size=1024
    )


# --- the priority order, one adjacent pair at a time ---------------------------------------------

SOURCES = ["init", "env", "dotenv", "user_env", "toml", "yaml"]


def put(source: str, value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Set model_backend.model in one source; returns constructor kwargs for "init"."""
    line = f"MAMBA_MODEL_BACKEND__MODEL={value}\n"
    if source == "init":
        return {"model_backend": {"model": value}}
    if source == "env":
        monkeypatch.setenv("MAMBA_MODEL_BACKEND__MODEL", value)
    elif source == "dotenv":
        dirs.write(".env", line)
    elif source == "user_env":
        dirs.user_env(line)
    elif source == "toml":
        dirs.write("config.toml", f'[model_backend]\nmodel = "{value}"\n')
    elif source == "yaml":
        dirs.write("config.yaml", f"model_backend:\n  model: {value}\n")
    else:  # pragma: no cover - a typo in a test
        raise AssertionError(source)
    return {}


@pytest.mark.parametrize("source", SOURCES)
def test_each_source_alone_is_read(
    source: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs = put(source, "from-" + source, dirs, monkeypatch)
    assert AgentSettings(**kwargs).model_backend.model == "from-" + source


@pytest.mark.parametrize(("higher", "lower"), list(itertools.pairwise(SOURCES)), ids=str)
def test_higher_source_wins(
    higher: str, lower: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written lower first, then higher, and the other way round: file order must not matter.
    kwargs = put(lower, "low", dirs, monkeypatch)
    kwargs |= put(higher, "high", dirs, monkeypatch)
    assert AgentSettings(**kwargs).model_backend.model == "high"
    assert load_settings(**kwargs).model_backend.model == "high"


def test_sources_merge_key_by_key(dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs.write("config.yaml", "model_backend:\n  timeout: 5\n  model: from-yaml\n")
    dirs.write("config.toml", '[model_backend]\nmodel = "from-toml"\n')
    dirs.user_env("MAMBA_MAX_ITERATIONS=7\n")
    dirs.write(".env", "MAMBA_MODEL_BACKEND__MAX_RETRIES=9\n")
    monkeypatch.setenv("MAMBA_SYSTEM_PROMPT", "be brief")
    s = AgentSettings(model_backend={"seed": 1})
    assert s.model_backend.model == "from-toml"
    assert s.model_backend.timeout == 5.0  # only yaml sets it: toml wins per key, not per file
    assert s.model_backend.max_retries == 9
    assert s.model_backend.seed == 1
    assert s.max_iterations == 7
    assert s.system_prompt == "be brief"


def test_home_is_resolved_at_load_time(
    dirs: Dirs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs.user_env("MAMBA_SYSTEM_PROMPT=first home\n")
    assert AgentSettings().system_prompt == "first home"
    other = tmp_path / "other-home"
    other.mkdir()
    (other / "agents.env").write_text("MAMBA_SYSTEM_PROMPT=second home\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(other))
    assert AgentSettings().system_prompt == "second home"


def test_no_home_directory_still_reads_dotenv(dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    dirs.write(".env", "MAMBA_SYSTEM_PROMPT=project\n")
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert AgentSettings().system_prompt == "project"


# --- _env_file and load(config_file) -------------------------------------------------------------


def test_env_file_argument_replaces_both_env_files(dirs: Dirs) -> None:
    dirs.write(".env", "MAMBA_SYSTEM_PROMPT=dotenv\nMAMBA_MAX_ITERATIONS=3\n")
    dirs.user_env("MAMBA_BACKEND=local\n")
    prod = dirs.write("production.env", "MAMBA_SYSTEM_PROMPT=production\n")
    s = AgentSettings(_env_file=prod)
    assert s.system_prompt == "production"
    assert s.max_iterations == 10  # .env was not read
    assert s.backend == "openai"  # ~/agents.env was not read


def test_env_file_none_reads_no_env_file(dirs: Dirs) -> None:
    dirs.write(".env", "MAMBA_SYSTEM_PROMPT=dotenv\n")
    dirs.user_env("MAMBA_SYSTEM_PROMPT=user\n")
    assert AgentSettings(_env_file=None).system_prompt == ""


def test_env_file_tuple_later_file_wins(dirs: Dirs) -> None:
    a = dirs.write("a.env", "MAMBA_SYSTEM_PROMPT=a\nMAMBA_MAX_ITERATIONS=4\n")
    b = dirs.write("b.env", "MAMBA_SYSTEM_PROMPT=b\n")
    s = load_settings(_env_file=(a, b))
    assert (s.system_prompt, s.max_iterations) == ("b", 4)


def test_env_file_encoding_option_is_kept(dirs: Dirs) -> None:
    dirs.write(".env", "")
    (dirs.project / ".env").write_bytes("MAMBA_SYSTEM_PROMPT=caf\xe9\n".encode("latin-1"))
    assert AgentSettings(_env_file_encoding="latin-1").system_prompt == "café"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("prod.toml", '[model_backend]\nmodel = "file"\n'),
        ("prod.yaml", "model_backend:\n  model: file\n"),
        ("prod.yml", "model_backend:\n  model: file\n"),
        ("prod.json", json.dumps({"model_backend": {"model": "file"}})),
    ],
)
def test_load_reads_the_given_file_instead_of_the_defaults(
    name: str, text: str, dirs: Dirs
) -> None:
    dirs.write("config.toml", '[model_backend]\nmodel = "default-toml"\ntimeout = 9\n')
    dirs.write("config.yaml", "max_iterations: 99\n")
    path = dirs.write(name, text)
    for config_file in (path, str(path)):
        s = AgentSettings.load(config_file)
        assert s.model_backend.model == "file"
        assert s.model_backend.timeout == 30.0  # config.toml was not read
        assert s.max_iterations == 10  # config.yaml was not read
    assert load_settings(config_file=path).model_backend.model == "file"
    # The override lasts only for that call.
    assert AgentSettings().model_backend.model == "default-toml"


def test_the_constructor_takes_the_config_file_as_an_argument(dirs: Dirs) -> None:
    # The file travels in the call, not in state beside it: load() is the constructor plus errors.
    dirs.write("config.toml", '[model_backend]\nmodel = "default-toml"\n')
    path = dirs.write("prod.toml", '[model_backend]\nmodel = "file"\n')
    assert AgentSettings(_config_file=path).model_backend.model == "file"
    assert AgentSettings(_config_file=None).model_backend.model == "default-toml"
    with pytest.raises(ConfigError, match=r"config file not found: nowhere\.toml"):
        AgentSettings(_config_file="nowhere.toml")


def test_load_file_ranks_below_env_and_overrides(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = dirs.write(
        "prod.toml", 'system_prompt = "file"\nmax_iterations = 5\nbackend = "local"\n'
    )
    dirs.write(".env", "MAMBA_MAX_ITERATIONS=6\n")
    monkeypatch.setenv("MAMBA_SYSTEM_PROMPT", "env")
    s = AgentSettings.load(path, backend="openai")
    assert (s.system_prompt, s.max_iterations, s.backend) == ("env", 6, "openai")


def test_load_rejects_unknown_suffix(dirs: Dirs) -> None:
    dirs.write("settings.ini", "[x]\n")
    with pytest.raises(ConfigError, match=r"unsupported config file settings\.ini.*\.toml"):
        AgentSettings.load("settings.ini")


def test_load_rejects_missing_file() -> None:
    with pytest.raises(ConfigError, match=r"config file not found: nowhere\.toml"):
        AgentSettings.load("nowhere.toml")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda path: path.mkdir(), "a directory"),
        (lambda path: path.symlink_to("gone.toml"), "a symbolic link to nothing"),
        (os.mkfifo, "not a regular file (a pipe or a device)"),
    ],
)
def test_a_config_file_that_is_not_a_file_is_an_error_not_skipped(
    dirs: Dirs, make: Any, kind: str
) -> None:
    # Skipped, a config.toml left a dangling link (or a directory) ran on other settings
    # without a word; given by name, a pipe was reported "not found", or read until it closed.
    make(dirs.project / "config.toml")
    assert config_error() == (
        f"config file config.toml in the working directory is {kind}, so it cannot be read; "
        "make it a file of settings, or remove it"
    )
    with pytest.raises(ConfigError) as info:
        AgentSettings.load("config.toml")
    assert str(info.value) == f"config file config.toml is {kind}; give a file of settings"


@pytest.mark.parametrize(
    ("name", "text", "pattern"),
    [
        ("config.toml", "a = 1\nmodel_backend = ]\n", r"config\.toml: Invalid.*line 2"),
        ("config.yaml", "a: b: c\n", r"config\.yaml: mapping values.*line 1, column 5"),
        ("config.yaml", "- 1\n- 2\n", r"config\.yaml must hold a table.*not a list"),
    ],
)
def test_unreadable_default_config_file_is_a_config_error(
    name: str, text: str, pattern: str, dirs: Dirs
) -> None:
    dirs.write(name, text)
    with pytest.raises(ConfigError, match=pattern):
        AgentSettings()  # the plain constructor reads the default files too


@pytest.mark.parametrize(
    ("name", "text", "pattern"),
    [
        ("prod.json", "{nope", r"prod\.json.*line 1 column 2"),
        ("prod.json", "[1, 2]", r"prod\.json must hold a table"),
        ("prod.toml", "x = \n", r"prod\.toml: Invalid value"),
    ],
)
def test_unreadable_given_config_file_is_a_config_error(
    name: str, text: str, pattern: str, dirs: Dirs
) -> None:
    dirs.write(name, text)
    with pytest.raises(ConfigError, match=pattern):
        AgentSettings.load(name)


def test_unreadable_yaml_without_a_position(dirs: Dirs) -> None:
    dirs.write("config.yaml", "\x00")
    with pytest.raises(ConfigError, match=r"cannot read config file config\.yaml"):
        AgentSettings()


def test_config_file_that_is_not_utf8(dirs: Dirs) -> None:
    (dirs.project / "config.yaml").write_bytes(b"model_backend:\n  model: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"config\.yaml is not UTF-8 text \(byte 24 is 0xff\)"):
        AgentSettings()


def test_empty_yaml_file_gives_defaults(dirs: Dirs) -> None:
    dirs.write("config.yaml", "")
    assert AgentSettings().model_backend.model == "llama3.2"


# --- engine fields -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "expected"), [("interactive", 0.60), ("default", 0.70), ("batch", 0.90)]
)
def test_gate_profile_sets_the_threshold(profile: str, expected: float) -> None:
    assert AgentSettings(gate_profile=profile).effective_gate_threshold == expected
    assert AgentSettings(gate_profile=profile, gate_threshold=0.5).effective_gate_threshold == 0.5


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("calculator", ["calculator"]),
        ("calculator, grep ", ["calculator", "grep"]),
        ('["calculator", "glob"]', ["calculator", "glob"]),
        ("", []),
    ],
)
def test_tools_from_env(raw: str, expected: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_TOOLS", raw)
    assert AgentSettings().tools == expected


def test_tools_from_a_list_and_from_toml(dirs: Dirs) -> None:
    assert AgentSettings(tools=["bash"]).tools == ["bash"]
    dirs.write("config.toml", 'tools = ["read_file", "grep"]\n')
    assert AgentSettings().tools == ["read_file", "grep"]


def test_env_values_are_coerced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_MEMORY_SQLITE", "true")
    monkeypatch.setenv("MAMBA_CHECKPOINT_PATH", "runs/cp.sqlite")
    monkeypatch.setenv("MAMBA_STREAMING__CHUNK_SIZE", "2048")
    monkeypatch.setenv("MAMBA_LOGGING__LEVEL", "debug")
    monkeypatch.setenv("MAMBA_RETRY", '{"retry_level": 3}')
    s = AgentSettings()
    assert s.memory_sqlite is True
    assert s.checkpoint_path == Path("runs/cp.sqlite")
    assert s.streaming.chunk_size == 2048
    assert s.logging.level == "DEBUG"
    assert s.retry.retry_level == 3


def test_unrelated_mamba_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_SOMETHING_ELSE", "1")
    assert AgentSettings().max_iterations == 10


# --- sections ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "tool", "model", "multiplier"), [(1, 1, 2, 2.0), (2, 2, 3, 1.5), (3, 3, 5, 1.2)]
)
def test_retry_level_table(level: int, tool: int, model: int, multiplier: float) -> None:
    cfg = ErrorRecoveryConfig(retry_level=level)
    assert (cfg.tool_retries, cfg.model_retries, cfg.backoff_multiplier) == (
        tool,
        model,
        multiplier,
    )


def test_retry_overrides_win_over_the_level() -> None:
    cfg = ErrorRecoveryConfig(retry_level=1, tool_max_retries=7, model_max_retries=0)
    assert (cfg.tool_retries, cfg.model_retries) == (7, 0)


def test_backend_headers_and_params() -> None:
    assert ModelBackendSettings().get_headers() == {}
    assert ModelBackendSettings.model_validate({"api_key": CANARY}).get_headers() == {
        "Authorization": f"Bearer {CANARY}"
    }
    assert ModelBackendSettings(api_key=SecretStr(CANARY)).get_headers() == {
        "Authorization": f"Bearer {CANARY}"
    }
    params = ModelBackendSettings(temperature=0, top_p=1, max_tokens=5, seed=0).generation_params()
    assert params == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 5, "seed": 0}
    assert ModelBackendSettings().generation_params() == {}


def test_secret_values_walks_every_secret_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_CHECKPOINT_URL", "postgresql://app:pw-1234567@db/runs")
    settings = AgentSettings(
        _env_file=None,
        model_backend={"api_key": CANARY},
        mcp_servers=[
            {
                "name": "api",
                "url": "http://h/mcp",
                "auth": {"key": "written-key-1"},
                "headers": {"X-Plain": "header-value-1", "X-Ref": "Bearer ${TOKEN}"},
            },
            {"name": "cli", "command": "x", "env": {"SERVICE_TOKEN": "env-tok-1", "MODE": "m"}},
            {"name": "ref", "url": "http://h/mcp", "auth": {"key": "${REF_KEY}"}},
        ],
    )
    assert settings.secret_values() == {
        "checkpoint_url": "postgresql://app:pw-1234567@db/runs",
        "mcp_servers[0].auth.key": "written-key-1",
        "mcp_servers[0].headers.X-Plain": "header-value-1",
        "mcp_servers[1].env.SERVICE_TOKEN": "env-tok-1",
        "model_backend.api_key": CANARY,
    }
    assert AgentSettings(_env_file=None, budget={"rates": {"m": {}}}).secret_values() == {
        "checkpoint_url": "postgresql://app:pw-1234567@db/runs"
    }


def test_api_key_is_trimmed_and_empty_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModelBackendSettings.model_validate({"api_key": f"  {CANARY}\n"}).get_headers() == {
        "Authorization": f"Bearer {CANARY}"
    }
    assert ModelBackendSettings.model_validate({"api_key": ""}).api_key is None
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", "")
    assert AgentSettings().model_backend.api_key is None


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("http://localhost:11434/v1/", "http://localhost:11434/v1"),
        ("https://api.example.com/v1", "https://api.example.com/v1"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_base_url_accepts_http_urls(given: str, stored: str) -> None:
    assert ModelBackendSettings(base_url=given).base_url == stored


def test_logging_patterns_compile() -> None:
    cfg = LoggingConfig(sensitive_patterns=[r"token=\w+"])
    assert cfg.compiled_patterns[0].sub("token=***", "a token=abc b") == "a token=*** b"


def test_sections_accept_valid_values() -> None:
    assert ObservabilityConfig(custom_collectors=["pkg.mod:Collector", "pkg.mod"]).custom_collectors
    assert CompactionConfig(hybrid_weights={"importance_scoring": 1.0}).hybrid_weights == {
        "importance_scoring": 1.0
    }
    assert CompactionConfig(hybrid_weights={}).hybrid_weights == {}
    assert TokenizerConfig(safety_margin=0.5).safety_margin == 0.5


# --- validation errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "path", "allowed"),
    [
        ({"model_backend": {"timeout": 0}}, "model_backend.timeout", "a finite number > 0"),
        ({"model_backend": {"max_retries": -1}}, "model_backend.max_retries", "an integer >= 0"),
        ({"model_backend": {"temperature": 2.5}}, "model_backend.temperature", ">= 0 and <= 2"),
        (
            {"model_backend": {"top_p": -0.1}},
            "model_backend.top_p",
            "a finite number >= 0 and <= 1",
        ),
        ({"model_backend": {"max_tokens": 0}}, "model_backend.max_tokens", "an integer > 0"),
        ({"model_backend": {"base_url": "ftp://x"}}, "model_backend.base_url", "http://"),
        ({"model_backend": {"base_url": "localhost"}}, "model_backend.base_url", "http://"),
        ({"model_backend": {"model": ""}}, "model_backend.model", "text"),
        ({"max_iterations": 0}, "max_iterations", "an integer >= 1 and <= 1000"),
        ({"max_iterations": 1001}, "max_iterations", "<= 1000"),
        ({"gate_threshold": 1.5}, "gate_threshold", "a finite number >= 0 and <= 1"),
        ({"gate_profile": "fast"}, "gate_profile", "'interactive', 'default', 'batch'"),
        ({"backend": "cloud"}, "backend", "one of 'openai', 'local'"),
        ({"memory_sqlite": "maybe"}, "memory_sqlite", "true or false"),
        ({"checkpoint_path": 5}, "checkpoint_path", "a file path"),
        ({"logging": {"level": "LOUD"}}, "logging.level", "'DEBUG', 'INFO'"),
        ({"logging": {"body_size_limit": -1}}, "logging.body_size_limit", ">= 0"),
        (
            {"logging": {"sensitive_patterns": ["ok", "a("]}},
            "logging.sensitive_patterns[1]: not a valid regular expression",
            "allowed: text; given: 'a('",
        ),
        (
            {"observability": {"request_id_format": "uuid1"}},
            "observability.request_id_format",
            "'ulid'",
        ),
        (
            {"observability": {"custom_collectors": ["not a path"]}},
            "observability.custom_collectors[0]",
            "import path",
        ),
        ({"retry": {"retry_level": 4}}, "retry.retry_level", "an integer >= 1 and <= 3"),
        ({"retry": {"retry_level": 0}}, "retry.retry_level", ">= 1"),
        ({"retry": {"tool_max_retries": -1}}, "retry.tool_max_retries", ">= 0"),
        (
            {"retry": {"initial_backoff_seconds": 100}},
            "retry.max_backoff_seconds",
            "must be >= initial_backoff_seconds (100.0)",
        ),
        ({"retry": {"circuit_breaker_threshold": 0}}, "retry.circuit_breaker_threshold", ">= 1"),
        ({"retry": {"circuit_breaker_timeout": 0}}, "retry.circuit_breaker_timeout", "> 0"),
        ({"token_tracking": {"safety_margin": 0.6}}, "token_tracking.safety_margin", "<= 0.5"),
        ({"token_tracking": {"encoding": ""}}, "token_tracking.encoding", "text"),
        ({"context": {"strategy": "magic"}}, "context.strategy", "'hybrid'"),
        ({"context": {"target_tokens": 100_000}}, "context.target_tokens", "must be below"),
        (
            {"context": {"trigger_threshold_tokens": 50_000}},
            "context.target_tokens",
            "trigger_threshold_tokens (50000)",
        ),
        (
            {"context": {"hybrid_weights": {"telepathy": 1}}},
            "context.hybrid_weights['telepathy']: not one of the allowed choices",
            "allowed: one of 'sliding_window', 'summarize_older'",
        ),
        (
            {"context": {"hybrid_weights": {"sliding_window": -1}}},
            "context.hybrid_weights['sliding_window']",
            "allowed: a finite number >= 0; given: -1",
        ),
        (
            {"context": {"hybrid_weights": {"sliding_window": 0}}},
            "context.hybrid_weights",
            "at least one weight",
        ),
        ({"streaming": {"chunk_size": 0}}, "streaming.chunk_size", "an integer > 0"),
        ({"tools": "[not json"}, "tools: must be a JSON list", "allowed: a list"),
    ],
)
def test_config_error_names_field_and_what_is_allowed(
    kwargs: dict[str, Any], path: str, allowed: str
) -> None:
    message = config_error(**kwargs)
    assert f"\n  {path}" in message
    assert allowed in message


def test_config_error_message_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__TIMEOUT", "-1")
    message = config_error(max_iterations=0)
    assert message == (
        "invalid settings (2 problems):\n"
        "  max_iterations: Input should be greater than or equal to 1\n"
        "    allowed: an integer >= 1 and <= 1000; given: 0\n"
        "    set by the argument max_iterations=; change it there\n"
        "  model_backend.timeout: Input should be greater than 0\n"
        "    allowed: a finite number > 0; given: '-1'\n"
        "    set by the environment variable MAMBA_MODEL_BACKEND__TIMEOUT; change it there"
    )


@pytest.mark.parametrize(
    ("where", "setting", "set_by"),
    [
        ("toml", "model_backend.timeout", "set by model_backend.timeout in config.toml"),
        ("yaml", "lease_seconds", "set by lease_seconds in config.yaml"),
        ("env", "budget.max_cost", "the environment variable MAMBA_BUDGET__MAX_COST"),
        ("argument", "retry.max_backoff_seconds", "set by the argument retry="),
    ],
)
def test_a_number_that_is_not_finite_is_refused_from_every_source(
    where: str, setting: str, set_by: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A JSON file refuses NaN and Infinity itself; TOML, YAML and the environment read them as
    # floats: a timeout or a lease that never ends, a price that makes every cost infinite.
    kwargs: dict[str, Any] = {}
    if where == "toml":
        dirs.write("config.toml", "[model_backend]\ntimeout = inf\n")
    elif where == "yaml":
        dirs.write("config.yaml", "lease_seconds: .inf\n")
    elif where == "env":
        monkeypatch.setenv("MAMBA_BUDGET__MAX_COST", "Infinity")
    else:
        kwargs["retry"] = {"max_backoff_seconds": float("nan")}
    message = config_error(**kwargs)
    assert f"  {setting}: Input should be a finite number\n    allowed: a finite number" in message
    assert set_by in message


def test_literal_error_lists_the_choices() -> None:
    message = config_error(context={"strategy": "magic"})
    assert "context.strategy: not one of the allowed choices" in message
    assert (
        "allowed: one of 'sliding_window', 'summarize_older', 'selective_pruning', "
        "'importance_scoring', 'hybrid'; given: 'magic'"
    ) in message


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("dotenv", "set by MAMBA_STREAMING__CHUNK_SIZE in .env"),
        ("user_env", "set by MAMBA_STREAMING__CHUNK_SIZE in {home}/agents.env"),
        ("toml", "set by streaming.chunk_size in config.toml"),
        ("yaml", "set by streaming.chunk_size in config.yaml"),
        ("section_env", "set by the environment variable MAMBA_STREAMING"),
        ("section_dotenv", "set by MAMBA_STREAMING in .env"),
    ],
)
def test_config_error_names_the_source(
    where: str, expected: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = "MAMBA_STREAMING__CHUNK_SIZE=0\n"
    if where == "dotenv":
        dirs.write(".env", line)
    elif where == "user_env":
        dirs.write(".env", "MAMBA_SYSTEM_PROMPT=not it\n")  # read first, does not have it
        dirs.user_env(line)
    elif where == "section_dotenv":
        dirs.write(".env", "MAMBA_STREAMING='{\"chunk_size\": 0}'\n")
    elif where == "toml":
        dirs.write("config.toml", "[streaming]\nchunk_size = 0\n")
    elif where == "yaml":
        dirs.write("config.yaml", "streaming:\n  chunk_size: 0\n")
    else:
        monkeypatch.setenv("MAMBA_STREAMING", '{"chunk_size": 0}')
    message = config_error()
    assert "streaming.chunk_size: Input should be greater than 0" in message
    assert expected.format(home=dirs.home) in message


def test_config_error_names_the_given_files(dirs: Dirs) -> None:
    custom = dirs.write("custom.env", "MAMBA_STREAMING__CHUNK_SIZE=0\n")
    assert f"set by MAMBA_STREAMING__CHUNK_SIZE in {custom}" in config_error(_env_file=custom)
    assert "set by MAMBA_STREAMING__CHUNK_SIZE in custom.env" in config_error(
        _env_file=("missing.env", "custom.env")
    )
    dirs.write("prod.yaml", "streaming:\n  chunk_size: 0\n")
    assert "set by streaming.chunk_size in prod.yaml" in config_error(config_file="prod.yaml")


def test_config_error_when_the_value_is_a_default() -> None:
    # initial_backoff_seconds is set, max_backoff_seconds keeps its default: say how to set it.
    message = config_error(retry={"initial_backoff_seconds": 100}, _env_file=None)
    assert "retry.max_backoff_seconds: must be >= initial_backoff_seconds (100.0)" in message
    assert "given: 60.0" in message
    assert (
        "set it with MAMBA_RETRY__MAX_BACKOFF_SECONDS (environment or an env file) or "
        "max_backoff_seconds under [retry] in config.toml"
    ) in message


def test_config_error_hint_for_top_level_default(dirs: Dirs) -> None:
    dirs.write("config.yaml", "context:\n  trigger_threshold_tokens: 10\n")
    message = config_error()
    assert "set it with MAMBA_CONTEXT__TARGET_TOKENS" in message
    assert "target_tokens under [context] in config.yaml" in message


def test_unknown_keys_in_sections_are_errors(dirs: Dirs) -> None:
    dirs.write("config.toml", "[model_backend]\ntimout = 5\n")
    message = config_error()
    assert "model_backend.timout: unknown setting" in message
    assert "known here: base_url, api_key, model, timeout" in message
    assert "set by model_backend.timout in config.toml" in message


def test_a_misspelt_variable_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAMBA_RETRY__MAX_ATEMPTS", "3")
    message = config_error()
    assert "retry.max_atempts: unknown setting" in message
    assert "set by the environment variable MAMBA_RETRY__MAX_ATEMPTS" in message


def test_long_values_are_shortened() -> None:
    message = config_error(max_iterations="9" * 500)
    assert "given: '" + "9" * 76 + "..." in message
    assert "9" * 200 not in message


def test_bad_section_json_in_env_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND", "{not json")
    message = config_error()
    assert 'cannot read settings: error parsing value for field "model_backend"' in message
    assert "MAMBA_MODEL_BACKEND__TIMEOUT=10" in message


def test_whole_section_of_the_wrong_type(monkeypatch: pytest.MonkeyPatch) -> None:
    message = config_error(streaming=5)
    assert "streaming: Input should be a valid dictionary" in message
    assert "given: (a structured value, not shown)" in message


def test_config_error_does_not_chain_the_validation_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(max_iterations=0)
    assert info.value.__cause__ is None
    assert info.value.__context__ is None


def test_plain_constructor_raises_validation_error_with_hidden_inputs() -> None:
    with pytest.raises(ValidationError) as info:
        AgentSettings(max_iterations=123456789)
    assert "max_iterations" in str(info.value)
    assert "123456789" not in str(info.value)


# --- secrets -------------------------------------------------------------------------------------


def assert_no_canary(*texts: str) -> None:
    for text in texts:
        assert CANARY not in text
        assert "CANARY" not in text.upper()


def assert_settings_hide_the_key(settings: AgentSettings) -> None:
    assert settings.model_backend.get_headers() == {"Authorization": f"Bearer {CANARY}"}
    assert_no_canary(
        repr(settings),
        str(settings),
        settings.model_dump_json(),
        repr(settings.model_backend),
        str(settings.model_backend),
        str(settings.model_dump()),
    )


SecretSetter = Callable[[str, Dirs, pytest.MonkeyPatch], dict[str, Any]]


def via_init(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return {"model_backend": {"api_key": value}}


def via_env(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", value)
    return {}


def via_dotenv(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dirs.write(".env", f'MAMBA_MODEL_BACKEND__API_KEY="{value}"\n')
    return {}


def via_user_env(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dirs.user_env(f'MAMBA_MODEL_BACKEND__API_KEY="{value}"\n')
    return {}


def via_toml(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dirs.write("config.toml", f"[model_backend]\napi_key = {json.dumps(value)}\n")
    return {}


def via_yaml(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dirs.write("config.yaml", f"model_backend:\n  api_key: {json.dumps(value)}\n")
    return {}


def via_section_env(value: str, dirs: Dirs, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND", json.dumps({"api_key": value}))
    return {}


SETTERS = [via_init, via_env, via_dotenv, via_user_env, via_toml, via_yaml, via_section_env]


@pytest.mark.parametrize("setter", SETTERS, ids=lambda f: f.__name__)
def test_valid_secret_never_shows(
    setter: SecretSetter, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs = setter(CANARY, dirs, monkeypatch)
    assert_settings_hide_the_key(AgentSettings(**kwargs))
    assert_settings_hide_the_key(load_settings(**kwargs))


@pytest.mark.parametrize("setter", SETTERS, ids=lambda f: f.__name__)
def test_invalid_secret_never_shows(
    setter: SecretSetter, dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    kwargs = setter(f"{CANARY} has a space", dirs, monkeypatch)
    # Another error next to it, so the message also shows a non-secret value.
    kwargs["max_iterations"] = 0
    message = config_error(**kwargs)
    assert "model_backend.api_key: must not contain spaces" in message
    assert "given: (secret, hidden)" in message
    assert "given: 0" in message
    assert_no_canary(message)
    with pytest.raises(ValidationError) as info:
        AgentSettings(**kwargs)
    assert_no_canary(str(info.value), repr(info.value))


def test_secret_of_the_wrong_type_never_shows() -> None:
    message = config_error(model_backend={"api_key": 987654321})
    assert "model_backend.api_key: Input should be a valid string" in message
    assert "987654321" not in message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model_backend": {"apikey": CANARY}},
        {"model_backend": CANARY},
        {"model_backend": [CANARY]},
    ],
    ids=["misspelt key", "section as string", "section as list"],
)
def test_secret_in_the_wrong_place_never_shows(kwargs: dict[str, Any]) -> None:
    assert_no_canary(config_error(**kwargs))


def test_secret_misspelt_in_a_config_file_never_shows(dirs: Dirs) -> None:
    dirs.write("config.toml", f'[model_backend]\napi_kee = "{CANARY}"\n')
    message = config_error()
    assert "model_backend.api_kee: unknown setting" in message
    assert_no_canary(message)


def test_yaml_syntax_error_does_not_quote_the_line(dirs: Dirs) -> None:
    dirs.write("config.yaml", f"model_backend:\n  api_key: {CANARY}: oops\n")
    with pytest.raises(ConfigError) as info:
        AgentSettings()
    assert "line 2" in str(info.value)
    assert_no_canary(str(info.value))


def test_secret_bytes_control_characters_are_rejected() -> None:
    with pytest.raises(ValidationError, match="control characters"):
        ModelBackendSettings.model_validate({"api_key": f"{CANARY}\x07"})


def test_max_attempts_from_the_spec_env_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_RETRY__MAX_ATTEMPTS", "3")
    settings = load_settings()
    assert settings.retry.max_attempts == 3
    assert settings.retry.model_retries == 2
    assert ErrorRecoveryConfig(max_attempts=3, model_max_retries=0).model_retries == 0
    with pytest.raises(ConfigError, match=r"retry\.max_attempts"):
        load_settings(retry={"max_attempts": 0})


# --- bad input (issue 15) ------------------------------------------------------------------------


def test_an_unknown_key_in_a_default_config_file_is_an_error(dirs: Dirs) -> None:
    dirs.write("config.yaml", "max_iteratons: 3\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value).splitlines()[:2] == [
        "config file config.yaml has 1 unknown setting(s):",
        "  max_iteratons: unknown setting; did you mean 'max_iterations'?",
    ]


def test_unknown_keys_in_sections_name_the_closest_too(dirs: Dirs) -> None:
    dirs.write("config.toml", "[tool_config]\nmax_output_char = 500\n")
    with pytest.raises(ConfigError, match="did you mean 'max_output_chars'"):
        load_settings()


def test_unrelated_environment_variables_are_still_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAMBA_SOMETHING_ELSE", "1")
    assert load_settings().max_iterations == 10


@pytest.mark.parametrize("name", ["MAMBA_MODEL_BACKEND", "MAMBA_TOOLS"])
def test_json_nested_too_deep_in_the_environment(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value) == (
        "cannot read settings: a value set as JSON in the environment or an env file is nested "
        "more than 100 levels deep; flatten it"
    )


def test_a_config_file_too_large_is_refused_before_it_is_read(dirs: Dirs) -> None:
    dirs.write("config.toml", "# " + "x" * (4 * 1024 * 1024) + "\n")
    with pytest.raises(ConfigError, match=r"^config file config.toml is larger than 4 MiB"):
        load_settings()


def test_an_empty_tool_name_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_TOOLS", "calculator,,grep")
    with pytest.raises(ConfigError, match="tool name 2 of 3 is empty in 'calculator,,grep'"):
        load_settings()


def test_max_iterations_bound_in_the_settings() -> None:
    with pytest.raises(ConfigError, match="max_iterations: Input should be less than or equal"):
        load_settings(max_iterations=1001)


def test_a_yaml_merge_key_may_still_be_overridden(dirs: Dirs) -> None:
    # Repeated keys are refused (tests/cli/test_bad_input.py), but a key beside a merge is not one.
    dirs.write("c.yaml", "model_backend:\n  <<: {timeout: 5, model: m}\n  timeout: 7\n")
    settings = load_settings(config_file="c.yaml", _env_file=None)
    assert (settings.model_backend.timeout, settings.model_backend.model) == (7, "m")


def test_the_password_of_a_url_setting_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    # A server URL may carry its credentials (https://user:pw@host): masked like the API key.
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", f"http://user:{CANARY}@h:1/v1")
    settings = AgentSettings(
        _env_file=None,
        mcp_servers=[{"name": "api", "url": "https://u:mcp-pw-1234@h/mcp"}],
        tool_config={"web_search": {"url": "http://searx:8888"}},
    )
    assert settings.secret_values() == {
        "mcp_servers[0].url.password": "mcp-pw-1234",
        "model_backend.base_url.password": CANARY,
    }


def test_a_percent_encoded_or_query_password_is_a_secret_in_both_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The client sends "pw/canary@44" decoded: an error or a model writes it that way.
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", "http://user:pw%2Fcanary%4044@h:1/v1")
    settings = AgentSettings(
        _env_file=None, mcp_servers=[{"name": "api", "url": "https://h/mcp?password=q-pw-5566"}]
    )
    assert set(settings.secret_values().values()) == {
        "pw%2Fcanary%4044",
        "pw/canary@44",
        "q-pw-5566",
    }


def test_an_invalid_url_setting_hides_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", f"ftp://user:{CANARY}@h/v1")
    message = config_error()
    assert "given: 'ftp://user:***@h/v1'" in message
    assert_no_canary(message)
