"""Reading stored runs from the command line imports the run archive, never the model stack.

``runs``, ``show``, ``history``, ``graph``, ``export`` and ``plans`` read through a `RunArchive`
opened on its own: each is run here in a fresh interpreter, and what it loaded is checked
against the model stack (LangChain's OpenAI client, openai, tiktoken, the engine's model and
token modules, the Agent's runner). None of them loads LangChain, LangGraph or pydantic, nor,
given ``--db``, the settings (issue 20: each answers within a quarter of a second): ``runs``
and ``plans`` read the run store alone; ``show``, ``history``, ``graph`` and ``export`` read
checkpoints through the delta saver's read API and work the snapshots out themselves
(`ai_agent.graph.plain_reads`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.scripts import stored_calculation
from tests.test_layering import BEYOND_THE_STORE, heavy_modules
from tests.writer_process import writing

# What a command that reads the run store alone never loads: LangChain (which LangGraph's
# checkpoint package imports for its config type), LangGraph, the OpenAI client, the tokenizer,
# pydantic.
NO_LANGCHAIN = (
    *("langchain_core", "langchain_openai", "langgraph", "langsmith", "openai", "tiktoken"),
    "pydantic",  # the settings' and the plans' validation: nothing to validate in a listing
)

# What reading checkpoints does not need: the stages and the tools they import, the settings
# when --db says where the runs are, LangGraph's saver base and serializer (they import
# LangChain), nor the engine's saver itself (the reader reads through its read functions).
NOT_FOR_READING = (
    *("ai_agent.nodes", "ai_agent.tools", "ai_agent.config", "pydantic_settings"),
    *("langgraph.checkpoint", "ai_agent.checkpoints.delta", "ai_agent.graph.build"),
    # Nor what the result's typed output (pydantic's core), the Agent's telemetry, or a link
    # to a file (urllib's HTTP client, email, ssl) would need.
    *("pydantic_core", "ai_agent.observability.metrics", "ai_agent.observability.telemetry"),
    *("urllib.request", "http.client", "email"),
    # Nor an event loop: a local database is read without one (`ai_agent._loopless`).
    *("asyncio", "ssl", "concurrent.futures", "ai_agent.graph.worker"),
    # Nor the run context's protocols and dataclasses: the run store implements the journal
    # (`ai_agent.journal`), and the archive's run policy is made when asked for.
    "ai_agent.context",
)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with one stored run, ``t1``."""
    return stored_calculation(tmp_path_factory.mktemp("light"))[0]


def _loaded_by(argv: list[str]) -> tuple[int, str, list[str]]:
    """Run the command in a fresh interpreter: its exit code, its output, the modules it loaded.

    Only what the command loaded counts: under `pytest --cov` coverage starts in the child before
    the command (it reads its settings with tomllib, and imports inspect, socket, subprocess...),
    and those are not the command's.
    """
    script = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from ai_agent.cli import main\n"
        f"code = main({argv!r})\n"
        "print('\\n=modules=', *(m for m in sys.modules if m not in before), sep='\\n')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    out, _, modules = done.stdout.partition("\n=modules=\n")
    return done.returncode, out, modules.split()


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["show", "t1"],
        ["history", "t1"],
        ["graph", "--thread", "t1"],
        ["export", "t1", "--html", "{dir}/t1.html"],
        ["plans"],
    ],
    ids=lambda c: c[0],
)
def test_reading_commands_import_no_model_stack(database: Path, command: list[str]) -> None:
    argv = [part.format(dir=database.parent) for part in command]
    code, out, loaded = _loaded_by([*argv, "--db", str(database)])
    assert code == 0, out
    assert out.strip()  # it did read something
    assert "ai_agent.graph.archive" in loaded
    assert heavy_modules(loaded) == []
    assert heavy_modules(loaded, BEYOND_THE_STORE) == []
    assert heavy_modules(loaded, NO_LANGCHAIN) == []
    assert heavy_modules(loaded, NOT_FOR_READING) == []
    if command[0] not in ("runs", "plans"):  # checkpoints read, by the saver's read functions
        assert "ai_agent.checkpoints.reader" in loaded


@pytest.mark.parametrize(
    ("command", "code"),
    [(["tools"], 0), (["mcp", "list", "--config", "{dir}/mcp.json"], 1)],
    ids=["tools", "mcp list"],
)
def test_listing_tools_and_servers_builds_no_agent(
    tmp_path: Path, command: list[str], code: int
) -> None:
    # The Agent's catalog built alone (graph/catalog.py): the settings and the tools load,
    # the model stack, LangChain and LangGraph do not. A disabled server is not running: 1.
    servers = [{"name": "files", "command": "mcp-server-files", "enabled": False}]
    (tmp_path / "mcp.json").write_text(json.dumps({"mcp_servers": servers}))
    exit_code, out, loaded = _loaded_by([part.format(dir=tmp_path) for part in command])
    assert exit_code == code, out
    assert "calculator" in out or "files" in out
    assert "ai_agent.graph.catalog" in loaded
    # graph/options.py (the run policy from the settings) is the catalog's; it loads no more.
    assert heavy_modules(loaded) == ["ai_agent.graph.options"]
    langchain = ("langchain_core", "langchain_openai", "langgraph", "langsmith", "openai")
    assert heavy_modules(loaded, (*langchain, "tiktoken", "ai_agent.graph.agent")) == []
    # A listing needs the tools' specs, not what their calls use: the HTTP client (web_search),
    # YAML (notes' front matter), jsonschema (the built-ins' schemas are checked by the tests,
    # not at every start), the toolsmaker's sandbox and broker.
    assert heavy_modules(loaded, NOT_FOR_LISTING) == []


NOT_FOR_LISTING = (
    *("httpx", "jsonschema", "referencing", "attrs", "yaml", "urllib.request", "mcp"),
    # TOML is parsed when a .toml config file is read; ctypes is the bash reaper's own process's.
    *("tomllib", "ctypes"),
    *("ai_agent.tools.maker.policy", "ai_agent.tools.maker.broker", "ai_agent.tools.maker.confine"),
)


# What building the parser needs none of: an event loop (asyncio, and the ssl, socket,
# subprocess, logging and inspect it loads), urllib's HTTP client (http.client, email, ssl),
# thread pools, dataclasses (which import inspect), pydantic. A command imports what it needs
# in its handler.
NOT_AT_START_UP = (
    *("asyncio", "ssl", "socket", "subprocess", "concurrent.futures", "logging", "inspect"),
    *("urllib.request", "http.client", "email", "dataclasses", "pydantic_core", "uuid"),
    *("ai_agent.graph", "ai_agent.checkpoints", "ai_agent.observability", "ai_agent.state"),
)


def test_help_imports_no_langchain() -> None:
    code, out, loaded = _loaded_by(["--help"])
    assert code == 0
    assert "usage: ai-agent" in out
    assert heavy_modules(loaded, (*BEYOND_THE_STORE, *NO_LANGCHAIN)) == []
    assert heavy_modules(loaded) == []
    assert heavy_modules(loaded, NOT_AT_START_UP) == []
    assert "ai_agent.cli" in loaded
    # Every command's module is loaded (the parser lists them all), and no more of the engine.
    commands = {f"ai_agent.cli.{name}" for name in ("run", "inspect", "debug", "tools", "mcp")}
    assert commands <= set(loaded)


def test_a_command_that_runs_imports_the_model_stack(database: Path) -> None:
    # The check above is not vacuous: replaying drives a run, which needs the Agent.
    model = ["--model", f"scripted:{database.parent / 'script.json'}", "--tools", "calculator"]
    argv = ["replay", "t1", "--db", str(database), *model, "--quiet"]
    code, _, loaded = _loaded_by(argv)
    assert code == 0
    assert "ai_agent.graph.runner" in heavy_modules(loaded)


def test_sections_a_listing_never_validates_are_built_on_first_use() -> None:
    # An MCP server's config, its auth and a model's rates: built when first validated, not when
    # the settings are imported (``tools`` validates none of them), and as strict when they are.
    script = (
        "from ai_agent.config import AgentSettings, McpAuthConfig, McpServerConfig\n"
        "from ai_agent.config.tokens import ModelRate\n"
        "AgentSettings(_env_file=None)\n"
        "deferred = (McpAuthConfig, McpServerConfig, ModelRate)\n"
        "print([m.__pydantic_complete__ for m in deferred])\n"
        "try:\n"
        "    McpServerConfig(name='fs', command='x', bogus=1)\n"
        "except ValueError as exc:\n"
        "    print('refused', 'Extra inputs are not permitted' in str(exc))\n"
        "print(McpServerConfig.__pydantic_complete__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["[False, False, False]", "refused True", "True"]


@pytest.mark.parametrize(
    "command", [["runs"], ["show", "t1"], ["history", "t1"], ["plans"]], ids=lambda c: c[0]
)
def test_reading_commands_answer_while_another_process_writes(
    database: Path, command: list[str]
) -> None:
    # Opening the run store and the checkpoints to read takes no write lock (schema.py,
    # _schema.py: a database at the current version is left as it is), so a read answers at
    # once instead of waiting through the 30 s busy timeout for the writer to commit.
    with writing(database):
        done = subprocess.run(
            [sys.executable, "-m", "ai_agent.cli", *command, "--db", str(database)],
            capture_output=True,
            text=True,
            timeout=20,  # the busy timeout is 30 s: a read that waited for the lock fails here
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert {"runs": "t1", "show": "42", "history": "6*7 = 42", "plans": ""}[command[0]] in (
        done.stdout
    )
