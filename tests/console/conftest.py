"""Fixtures for the console: a real Agent over a SQLite file in tmp_path, its console in-process.

The pages are fetched through httpx's ASGI transport in the test's own event loop, the loop the
Agent's run store works in; the browser tests (test_browser.py) serve the real ``ai-agent ui``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.console import Access, create_app
from ai_agent.console.auth import hosts_for
from ai_agent.testing import ScriptedModel
from ai_agent.tools.maker import ToolsmakerRegistry

TOKEN = "t" * 40
HOST = "127.0.0.1:8765"


def write_call(content: str = "hello", path: str = "out.txt") -> dict[str, Any]:
    """A scripted turn that asks to write a file (a modification: the gate asks a person)."""
    return {"tool_calls": [{"name": "write_file", "args": {"path": path, "content": content}}]}


def appender(lines: list[str]) -> ToolSpec:
    """A modification tool that records each line it is asked to append."""

    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        lines.append(args["line"])
        return {"status": "ok", "content": f"appended {args['line']}"}

    return ToolSpec(
        "append_line",
        fn,
        description="Append a line to the log.",
        category=ToolCategory.MODIFICATION,
        parameters={
            "type": "object",
            "properties": {"line": {"type": "string"}},
            "required": ["line"],
        },
    )


MakeAgent = Callable[..., Agent]


@pytest.fixture
def make_agent(tmp_path: Path) -> MakeAgent:
    def make(turns: list[Any], **kwargs: Any) -> Agent:
        kwargs.setdefault("tools", ["write_file"])
        return Agent(
            model=ScriptedModel(turns),
            checkpoint_path=tmp_path / "c.sqlite",
            memory_path=None,
            settings=AgentSettings(),
            **kwargs,
        )

    return make


def client(agent: Agent, access: Access | None = None) -> httpx.AsyncClient:
    """An HTTP client of the agent's console, signed in unless told otherwise."""
    app = create_app(agent, access or Access(TOKEN, hosts_for("127.0.0.1", 8765)), interval=0.01)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=f"http://{HOST}", follow_redirects=False
    )


@pytest.fixture
async def signed_in() -> AsyncIterator[Callable[[Agent], httpx.AsyncClient]]:
    opened: list[httpx.AsyncClient] = []

    def open_for(agent: Agent) -> httpx.AsyncClient:
        http = client(agent)
        http.cookies.set("ai_agent_console", Access(TOKEN).session)
        opened.append(http)
        return http

    yield open_for
    for http in opened:
        await http.aclose()


def form_fields(page: str, thread: str) -> dict[str, str]:
    """The hidden fields of the first answer form of a run in the inbox page."""
    start = page.index(f'action="/inbox/{thread}/answer"')
    form = page[start : page.index("</form>", start)]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless, launched by its path (no browser download)."""
    from tests.console.browser import CHROMIUM, WAIT_MS, playwright_api

    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium")
    playwright_api.expect.set_options(timeout=WAIT_MS)
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context's page; no page may ever open a dialog (a script ran)."""
    from tests.console.browser import WAIT_MS

    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    dialogs: list[str] = []

    def dialog(d: Any) -> None:
        dialogs.append(d.message)
        d.dismiss()

    opened.on("dialog", dialog)
    yield opened
    context.close()
    assert dialogs == []  # no page ever ran a script of a model's or a tool's


@contextlib.asynccontextmanager
async def tools_console(
    make_agent: MakeAgent, signed_in: Callable[[Agent], httpx.AsyncClient], intent: Any
) -> AsyncIterator[tuple[ToolsmakerRegistry, httpx.AsyncClient]]:
    """A generated tool built from ``intent`` and waiting for review, and a signed-in console."""
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent(intent)
    agent = make_agent([{"text": "hi"}])
    async with agent:
        yield maker, signed_in(agent)
