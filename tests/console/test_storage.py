"""The storage page: the database's size, its largest runs, and a prune previewed and confirmed."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import unquote_plus, urlencode

import httpx

from ai_agent import Agent
from ai_agent.console.storage import PROTECTED
from tests.console.conftest import TOKEN, MakeAgent, client, write_call

Open = Callable[[Agent], httpx.AsyncClient]
CALC = [{"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]}, {"text": "42"}]


async def three_runs(make_agent: MakeAgent) -> Agent:
    """A finished run with a tool call, a finished one-turn run, a paused run, a crashed one."""
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write the report", thread_id="s-paused")
        await agent.store.create_run("s-crashed", "died mid-step")  # its row says running
    for thread, turns in (("s-big", CALC), ("s-small", [{"text": "hi"}])):
        done = make_agent(turns, tools=["calculator"])
        async with done:
            await done.run(f"task of {thread}", thread_id=thread)
    return agent


def hidden(page: str) -> dict[str, str]:
    form = page[page.index('id="prune-confirm"') :]
    form = form[: form.index("</form>")]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form))


async def test_the_page_shows_the_size_and_the_largest_runs_first(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = await three_runs(make_agent)
    async with agent:
        page = (await signed_in(agent).get("/storage")).text
    assert re.search(r'<dd id="size">\d+\.\d MiB', page)
    assert '<dd id="run-count">4</dd>' in page
    order = re.findall(r'<tr data-thread="([^"]+)">', page[page.index('id="largest"') :])
    assert order[0] == "s-big" and set(order) == {"s-big", "s-small", "s-paused"}


async def test_a_prune_is_previewed_then_done_as_previewed_sparing_paused_and_crashed(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = await three_runs(make_agent)
    async with agent:
        http = signed_in(agent)
        before = {t: len(await agent.archive.ahistory(t)) for t in ("s-big", "s-paused")}
        page = (await http.get("/storage", params={"keep_last": "0"})).text
        preview = page[page.index('id="preview"') :]
        pruned = re.findall(r'<li data-thread="([^"]+)"><code>', preview.split("<h3>Kept")[0])
        assert sorted(pruned) == ["s-big", "s-small"]
        assert f"<code>s-paused</code>: {PROTECTED['paused']}" in preview
        assert f"<code>s-crashed</code>: {PROTECTED['running']}" in preview
        assert "Prune these 2 run(s)" in preview
        assert before["s-big"] > 1  # still whole: a preview changes nothing

        done = await http.post("/storage/prune", data=hidden(page))
        assert done.status_code == 303
        assert unquote_plus(done.headers["location"]).startswith("/storage?done=pruned 2 run(s);")
        assert len(await agent.archive.ahistory("s-big")) == 1  # its latest checkpoint stays
        assert await agent.store.model_calls("s-big") == []  # its recording is gone
        assert len(await agent.archive.ahistory("s-paused")) == before["s-paused"]
        assert (await agent.get_result("s-paused")).status == "paused"  # still answerable
        shown = (await http.get(done.headers["location"])).text
        assert '<p class="queued" role="status" id="done">pruned 2 run(s);' in shown


async def test_a_confirmation_of_another_preview_prunes_nothing(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = await three_runs(make_agent)
    async with agent:
        http = signed_in(agent)
        stale = hidden((await http.get("/storage", params={"keep_last": "1"})).text)
        late = make_agent([{"text": "late"}])
        async with late:
            await late.run("a newer run", thread_id="s-late")  # now "all but the latest" differs
        refused = await http.post("/storage/prune", data=stale)
        assert refused.status_code == 409
        assert "changed since the preview; look at it again" in refused.text
        assert 'id="preview"' in refused.text  # the new preview, to confirm or not
        assert len(await agent.archive.ahistory("s-big")) > 1


async def test_mistakes_and_missing_csrf_are_refused_in_words(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = await three_runs(make_agent)
    async with agent:
        http = signed_in(agent)
        page = (await http.get("/storage", params={"keep_last": "0"})).text
        forged = {**hidden(page), "csrf": "forged"}
        assert (await http.post("/storage/prune", data=forged)).status_code == 403
        both = await http.get("/storage", params={"older_than": "1", "keep_last": "2"})
        assert "choose one" in both.text
        words = await http.get("/storage", params={"older_than": "soon"})
        assert "days must be a number" in words.text
        negative = await http.get("/storage", params={"keep_last": "-1"})
        assert "N: 0 or more" in negative.text
        empty = await http.post("/storage/prune", data={"csrf": hidden(page)["csrf"]})
        assert empty.status_code == 400 and "choose what to prune" in empty.text
        assert len(await agent.archive.ahistory("s-big")) > 1
        anonymous = await client(agent).get("/storage")
        assert anonymous.status_code == 403 and TOKEN not in anonymous.text


def test_a_database_without_the_saver_tables_has_no_sizes_to_give(tmp_path: Path) -> None:
    from ai_agent.checkpoints.sizes import run_sizes

    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).close()  # an SQLite file of someone else's
    assert run_sizes(path) is None


async def test_an_oversized_form_is_refused_unread(make_agent: MakeAgent, signed_in: Open) -> None:
    agent = await three_runs(make_agent)
    async with agent:
        refused = await signed_in(agent).post("/storage/prune", content=b"x" * 300_000)
    assert refused.status_code == 413 and "larger than 256,000 bytes" in refused.text


async def test_an_oversized_form_sent_in_chunks_is_refused_unread(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    # A chunked body declares no length: the limit holds for it too, and nothing is pruned.
    agent = await three_runs(make_agent)
    async with agent:
        http = signed_in(agent)
        before = len(await agent.archive.ahistory("s-big"))
        fields = hidden((await http.get("/storage", params={"keep_last": "0"})).text)

        async def chunks() -> AsyncIterator[bytes]:
            yield (urlencode(fields) + "&pad=").encode()
            for _ in range(30):
                yield b"x" * 10_000

        refused = await http.post(
            "/storage/prune",
            content=chunks(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert "content-length" not in refused.request.headers
        assert len(await agent.archive.ahistory("s-big")) == before
    assert refused.status_code == 413 and "larger than 256,000 bytes" in refused.text
