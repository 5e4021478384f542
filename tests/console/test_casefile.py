"""The run view's "Download as a regression test": what ``ai-agent test-from-run`` writes."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from ai_agent import Agent
from tests.console.conftest import MakeAgent

Open = Callable[[Agent], httpx.AsyncClient]
CALC = [{"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]}, {"text": "42"}]


@pytest.fixture
async def calculated(make_agent: MakeAgent, signed_in: Open) -> AsyncIterator[httpx.AsyncClient]:
    """The console of a database holding one finished run, ``calc-1``."""
    agent = make_agent(CALC, tools=["calculator"])
    async with agent:
        await agent.run("what is 6*7", thread_id="calc-1")
        yield signed_in(agent)


async def test_the_run_view_offers_the_test_and_its_recording_in_one_zip(
    calculated: httpx.AsyncClient,
) -> None:
    page = (await calculated.get("/runs/calc-1")).text
    assert 'href="/runs/calc-1/regression-test.zip" download>' in page
    response = await calculated.get("/runs/calc-1/regression-test.zip")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    disposition = 'attachment; filename="test_run_calc_1.zip"'
    assert response.headers["content-disposition"] == disposition
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert archive.namelist() == ["test_run_calc_1.py", "test_run_calc_1.recording.json"]
        source = archive.read("test_run_calc_1.py").decode()
        case = json.loads(archive.read("test_run_calc_1.recording.json"))
    assert 'RECORDING = Path(__file__).with_name("test_run_calc_1.recording.json")' in source
    assert '        ("calculator", {"expression": "6*7"}),' in source
    assert 'tools=["calculator"],' in source
    assert case["thread_id"] == "calc-1" and case["expected"]["final_text"] == "42"


async def test_an_unknown_or_malformed_run_is_a_404_in_words(
    calculated: httpx.AsyncClient,
) -> None:
    unknown = await calculated.get("/runs/nope/regression-test.zip")
    malformed = await calculated.get("/runs/%20bad%20/regression-test.zip")
    assert unknown.status_code == 404 and "no run with thread id nope" in unknown.text
    assert malformed.status_code == 404 and "thread id" in malformed.text
