"""Tokens against the usual choice: the same tasks, tools and local model, through ai-agent and
through LangGraph's prebuilt ReAct agent (`create_react_agent`).

Each task has an answer a program can check: arithmetic with the calculator, facts found in
files with ``grep_search`` and ``read_file``, a note found with ``find_similar``, and a delete
that must not happen unasked (ai-agent's gate pauses it; the check is that the file is still
there). Both engines get the same built-in tools (the peer as LangChain tools around the very
same functions), the same model server, temperature 0 and the same seed.

Per task and in total: success, prompt and completion tokens, model requests, wall time and the
engine's share of it (everything but the time spent waiting for the model). The model's time is
measured the same way for both: around each request, by the HTTP client both use.

Run it with ``python -m bench.peers [--tasks N] [--out DIR]``; it starts the built-in local
model server (the ``local`` extra) and takes several minutes on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common import Figure, child_section, in_turn, settle_disk

__all__ = [
    "TASKS",
    "Outcome",
    "Task",
    "TimedTransport",
    "make_workspace",
    "measure_peers",
    "peer_figures",
    "run_tasks",
]

SEED = 7
TOOLS = ("calculator", "grep_search", "read_file", "find_similar", "delete_file")


@dataclass(frozen=True, slots=True)
class Task:
    """One task: what is asked, and how its answer is checked."""

    name: str
    prompt: str
    expect: str = ""  # text the final answer must contain (case-insensitive)
    keeps: str = ""  # a file that must still exist afterwards (the refusal tasks)

    def passed(self, answer: str, workspace: Path) -> bool:
        """Whether ``answer`` (and the workspace after the run) is what the task wants."""
        if self.keeps and not (workspace / self.keeps).exists():
            return False
        return self.expect.lower() in answer.lower() if self.expect else True


def _arithmetic(a: int, op: str, b: int, answer: str) -> Task:
    return Task(
        f"calc {a}{op}{b}",
        f"Use the calculator to compute {a} {op} {b}. Answer with the number.",
        answer,
    )


TASKS: tuple[Task, ...] = (
    _arithmetic(17, "*", 23, "391"),
    _arithmetic(1234, "+", 4321, "5555"),
    _arithmetic(900, "/", 36, "25"),
    _arithmetic(2, "**", 10, "1024"),
    _arithmetic(1000, "-", 777, "223"),
    Task("calc percent", "Use the calculator: what is 15% of 240?", "36"),
    Task("calc nested", "Use the calculator to compute (12 + 8) * 7.", "140"),
    Task("calc modulo", "Use the calculator to compute 100 % 7.", "2"),
    Task("file port", "Find the port number in config.ini (use grep_search).", "8731"),
    Task("file owner", "Read team.md and say who leads project Falcon.", "Ada"),
    Task("file count", "How many widgets are in stock? Look in inventory.txt.", "42"),
    Task("file city", "Which city is the office in? Search the files for 'office'.", "Lisbon"),
    Task("file version", "What version is written in VERSION? Read the file.", "3.2.1"),
    Task("file color", "grep the files for 'color' and say which color is configured.", "teal"),
    Task("note tide", "Find my note about the tide and say when high tide is.", "06:40"),
    Task("note bread", "Search my notes for the bread recipe: how much flour?", "500"),
    Task("note wifi", "Search my notes: what is the guest wifi name?", "harbour-guest"),
    Task("note dentist", "Search my notes: what day is the dentist appointment?", "Thursday"),
    Task("refuse delete", "Delete the file inventory.txt.", keeps="inventory.txt"),
    Task("refuse config", "Remove config.ini, it is not needed.", keeps="config.ini"),
)

_FILES = {
    "config.ini": "[server]\nhost = 0.0.0.0\nport = 8731\n[ui]\ncolor = teal\n",
    "team.md": "# Teams\n\nProject Falcon is led by Ada. Project Heron is led by Bruno.\n",
    "inventory.txt": "widgets: 42\ngadgets: 7\nsprockets: 130\n",
    "office.txt": "Our office is in Lisbon, near the river.\n",
    "VERSION": "3.2.1\n",
}
_NOTES = {
    "tide.md": "# Tide table\n\nHigh tide tomorrow is at 06:40; low tide at 12:55.\n",
    "bread.md": "# Bread recipe\n\n500 g flour, 350 g water, 10 g salt, 5 g yeast.\n",
    "wifi.md": "# Home network\n\nThe guest wifi name is harbour-guest, password on the fridge.\n",
    "dentist.md": "# Appointments\n\nDentist on Thursday at 9:30.\n",
}


def make_workspace(root: Path) -> Path:
    """A fresh folder with the tasks' files and a ``notes`` folder; returns it."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in _FILES.items():
        (root / name).write_text(text)
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    for name, text in _NOTES.items():
        (notes / name).write_text(text)
    return root


def _usage_of(body: bytes) -> dict[str, Any]:
    """The server's token counts in a chat completion, plain JSON or streamed (the last one)."""
    text = body.decode("utf-8", "replace")
    found: dict[str, Any] = {}
    chunks = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    for chunk in chunks or [text]:
        try:
            data = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("usage"), dict):
            found = data["usage"]
    return found


class TimedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that adds up each request's time, body included, and the server's
    token counts: both engines are measured by the same code, whatever they report."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.seconds = 0.0
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = await self._inner.handle_async_request(request)
        body = await response.aread()  # the model's time ends with its last byte
        self.seconds += time.perf_counter() - started
        self.requests += 1
        usage = _usage_of(body)
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(slots=True)
class Outcome:
    """What one engine did with one task."""

    engine: str
    task: str
    passed: bool
    prompt_tokens: int
    completion_tokens: int
    requests: int
    wall: float
    model_seconds: float
    status: str = ""
    answer: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def engine_share(self) -> float:
        """The share of wall time that was not the model's."""
        return max(0.0, self.wall - self.model_seconds) / self.wall if self.wall else 0.0


def _chat_model(server: Any, client: httpx.AsyncClient) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=server.base_url,
        api_key=server.api_key,
        model=server.model_id,
        temperature=0,
        seed=SEED,
        use_responses_api=False,
        http_async_client=client,
        max_retries=0,
    )


def _settings(workspace: Path) -> Any:
    from ai_agent.config import AgentSettings

    return AgentSettings(
        _env_file=None,
        tool_config={"notes": {"folder": str(workspace / "notes")}},
    )


async def run_ours(task: Task, workspace: Path, server: Any) -> Outcome:
    """The task through ai-agent, with the model behind a timed transport."""
    from ai_agent import Agent

    transport = TimedTransport()
    client = httpx.AsyncClient(transport=transport, timeout=600)
    agent = Agent(
        model=_chat_model(server, client),
        tools=list(TOOLS),
        settings=_settings(workspace),
        workdir=workspace,
        checkpoint_path=workspace.parent / f"{workspace.name}.sqlite",
        memory_path=None,
        max_iterations=6,
    )
    started = time.perf_counter()
    async with client, agent:
        result = await agent.run(task.prompt)
    wall = time.perf_counter() - started
    answer = result.final_text or ""
    return Outcome(
        "ai-agent",
        task.name,
        task.passed(answer, workspace) and result.status in ("completed", "paused"),
        transport.prompt_tokens,
        transport.completion_tokens,
        transport.requests,
        wall,
        transport.seconds,
        result.status,
        answer,
    )


def _langchain_tools(workspace: Path) -> list[Any]:
    """The same built-in tools as LangChain tools: each calls the very same function."""
    from langchain_core.tools import StructuredTool

    from ai_agent.tools.builtin import builtin_tools

    specs = {s.name: s for s in builtin_tools(_settings(workspace).tool_config, workdir=workspace)}

    def wrap(name: str) -> Any:
        spec = specs[name]

        async def call(**args: Any) -> str:
            result = await spec.fn(args, {})
            if isinstance(result, dict):
                if result.get("status") == "error":
                    return f"error: {result.get('error')}"
                return str(result.get("content", result))
            return str(result)

        return StructuredTool.from_function(
            coroutine=call,
            name=name,
            description=spec.description,
            args_schema=dict(spec.parameters or {}),
        )

    return [wrap(name) for name in TOOLS]


async def run_peer(task: Task, workspace: Path, server: Any) -> Outcome:
    """The task through LangGraph's prebuilt ReAct agent, at its defaults."""
    from langgraph.prebuilt import create_react_agent

    transport = TimedTransport()
    client = httpx.AsyncClient(transport=transport, timeout=600)
    model = _chat_model(server, client)
    with warnings.catch_warnings():
        # LangGraph 1.x points to langchain's create_agent, which this project does not
        # install; the prebuilt agent is what the issue names and still what most users run.
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = create_react_agent(model, _langchain_tools(workspace))
    started = time.perf_counter()
    status = "completed"
    messages: list[Any] = []
    try:
        async with client:
            out = await graph.ainvoke(
                {"messages": [("user", task.prompt)]}, {"recursion_limit": 2 * 6 + 1}
            )
        messages = out["messages"]
    except Exception as exc:  # the peer's own failure (recursion limit...) is a failed task
        status = type(exc).__name__
    wall = time.perf_counter() - started
    answer = str(messages[-1].content) if messages else ""
    return Outcome(
        "create_react_agent",
        task.name,
        status == "completed" and task.passed(answer, workspace),
        transport.prompt_tokens,
        transport.completion_tokens,
        transport.requests,
        wall,
        transport.seconds,
        status,
        answer,
    )


Runner = Callable[[Task, Path, Any], Any]


async def run_tasks(tasks: tuple[Task, ...], server: Any, work: Path) -> list[Outcome]:
    """Every task through both engines, each in a fresh workspace."""
    outcomes: list[Outcome] = []
    engines: tuple[tuple[str, Runner], ...] = (("ours", run_ours), ("peer", run_peer))
    for index, task in enumerate(tasks):
        # The server caches the last prompt's prefix: whoever goes second on a task may find
        # the tools and the question already read, so the order alternates.
        for label, runner in in_turn(engines, index):
            workspace = make_workspace(work / f"{label}-{index}")
            outcome = await runner(task, workspace, server)
            outcomes.append(outcome)
            print(
                f"  {outcome.engine:<18} {task.name:<14} "
                f"{'ok ' if outcome.passed else 'NO '} {outcome.prompt_tokens:>6} prompt "
                f"{outcome.completion_tokens:>5} completion {outcome.requests:>2} requests "
                f"{outcome.wall:6.1f} s ({outcome.engine_share:.1%} engine) {outcome.status}",
                flush=True,
            )
    return outcomes


def totals(outcomes: list[Outcome], engine: str) -> dict[str, float]:
    """Sums over the tasks of one engine."""
    mine = [o for o in outcomes if o.engine == engine]
    wall = sum(o.wall for o in mine)
    model = sum(o.model_seconds for o in mine)
    return {
        "tasks": len(mine),
        "passed": sum(o.passed for o in mine),
        "prompt_tokens": sum(o.prompt_tokens for o in mine),
        "completion_tokens": sum(o.completion_tokens for o in mine),
        "tokens": sum(o.prompt_tokens + o.completion_tokens for o in mine),
        "requests": sum(o.requests for o in mine),
        "wall": wall,
        "engine_share": (wall - model) / wall if wall else 0.0,
    }


async def _run(args: argparse.Namespace) -> list[Outcome]:
    from ai_agent.local import LocalModelServer, ensure_model

    tasks = TASKS[: args.tasks] if args.tasks else TASKS
    work = Path(tempfile.mkdtemp(prefix="ai-agent-peers-"))
    async with LocalModelServer(
        ensure_model(), n_threads=args.threads, n_ctx=4096, seed=SEED
    ) as server:
        return await run_tasks(tasks, server, work)


def _report(outcomes: list[Outcome], out: Path) -> None:
    ours, peer = totals(outcomes, "ai-agent"), totals(outcomes, "create_react_agent")
    report = {"ours": ours, "peer": peer, "outcomes": [asdict(o) for o in outcomes]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(report, indent=2))
    for key in ("passed", "tokens", "prompt_tokens", "completion_tokens", "requests", "wall"):
        ratio = ours[key] / peer[key] if peer[key] else float("nan")
        print(f"{key:<18} ours {ours[key]:>10.4g}  peer {peer[key]:>10.4g}  ratio {ratio:.3g}")
    print(f"engine share       ours {ours['engine_share']:.2%}  peer {peer['engine_share']:.2%}")


def peer_figures(report: dict[str, Any]) -> list[Figure]:
    """The section's figures from ``peers.json``: each total against the peer's, as a ratio."""
    ours, peer = report["ours"], report["peer"]
    tasks = f"{ours['tasks']:.0f} tasks, real local model at temperature 0"

    def ratio(key: str) -> float:
        return ours[key] / peer[key] if peer[key] else float("inf")

    def row(name: str, key: str, unit: str, target: str, ok: bool) -> Figure:
        return Figure(
            "peers",
            name,
            ours[key],
            unit,
            peer[key],
            "create_react_agent, same tasks and tools",
            ratio(key),
            "ours / peer",
            target,
            ok,
            tasks,
        )

    return [
        row("tasks passed", "passed", "tasks", ">= 1", ratio("passed") >= 1),
        row("tokens (prompt + completion)", "tokens", "tokens", "<= 0.8", ratio("tokens") <= 0.8),
        row("model requests", "requests", "requests", "<= 0.8", ratio("requests") <= 0.8),
        row("wall time", "wall", "s", "report", True),
        Figure(
            "peers",
            "engine's share of wall time (all but the model)",
            100 * ours["engine_share"],
            "%",
            100 * peer["engine_share"],
            "create_react_agent's share",
            None,
            "-",
            "< 5 %",
            ours["engine_share"] < 0.05,
            f"{tasks}; the page cache written back first (bench.common.settle_disk)",
        ),
    ]


def measure_peers(
    work: Path, tasks: int = 0, python: str = sys.executable
) -> tuple[list[Figure], dict[str, Any]]:
    """Run the section in a fresh interpreter (it starts the local model server) and read it.

    Without the local model (the ``local`` extra, or its weights) the section is reported as
    not measured, with the reason, rather than failing the whole suite.
    """
    out = work / "peers"
    settled = settle_disk()
    command = [python, "-m", "bench.peers", "--out", str(out)]
    if tasks:
        command += ["--tasks", str(tasks)]
    report, missed, meta = child_section(
        command, out / "peers.json", "peers", "tokens against create_react_agent", "<= 0.8"
    )
    if report is None:
        return missed, meta
    report["settle_disk_seconds"] = round(settled, 3)
    return peer_figures(report), report


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.peers``: run the task set through both engines and print the totals."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks")
    parser.add_argument("--threads", type=int, default=2, help="the model server's threads")
    parser.add_argument("--out", default="bench-results", help="directory for peers.json")
    args = parser.parse_args(argv)
    _report(asyncio.run(_run(args)), Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
