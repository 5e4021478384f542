"""The console's front door: token, session cookie, Host, Origin, CSRF and the headers."""

from __future__ import annotations

import pytest

from ai_agent import Agent
from ai_agent.console import Access
from ai_agent.console.auth import hosts_for, is_loopback
from ai_agent.console.guard import SECURITY_HEADERS
from tests.console.conftest import HOST, TOKEN, MakeAgent, client, write_call


@pytest.fixture
def agent(make_agent: MakeAgent) -> Agent:
    return make_agent([write_call()])


async def test_without_the_token_every_page_is_forbidden(agent: Agent) -> None:
    async with client(agent) as http:
        for path in ("/", "/inbox", "/runs", "/runs/x", "/events", "/static/console.js"):
            response = await http.get(path)
            assert response.status_code == 403, path
            assert "open the console with the URL `ai-agent ui` printed" in response.text
        assert (await http.get("/inbox", params={"token": "wrong"})).status_code == 403
        http.cookies.set("ai_agent_console", "forged")
        assert (await http.get("/inbox")).status_code == 403
        post = await http.post("/inbox/t1/answer", data={"action": "stop"})
        assert post.status_code == 403


async def test_the_token_signs_in_once_and_leaves_the_address(agent: Agent) -> None:
    async with client(agent) as http:
        response = await http.get("/runs", params={"token": TOKEN, "status": "paused"})
        assert response.status_code == 303
        assert response.headers["location"] == "/runs?status=paused"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert TOKEN not in cookie  # the cookie is derived from the token, not the token
        assert (await http.get("/runs?status=paused")).status_code == 200
        # A path of two slashes would send the browser to another site: it stays here.
        response = await http.get(f"http://{HOST}//evil.example/x", params={"token": TOKEN})
        assert response.headers["location"] == "/evil.example/x"


async def test_another_host_name_is_refused(agent: Agent) -> None:
    # DNS rebinding: a page of another site whose name resolves to 127.0.0.1 sends its name.
    async with client(agent) as http:
        http.cookies.set("ai_agent_console", Access(TOKEN).session)
        response = await http.get("/inbox", headers={"host": "evil.example:8765"})
        assert response.status_code == 403
        assert "answers to its own address only" in response.text
        assert (await http.get("/inbox", headers={"host": "localhost:8765"})).status_code == 200


async def test_a_post_from_another_origin_or_without_csrf_is_refused(agent: Agent) -> None:
    async with client(agent) as http:
        http.cookies.set("ai_agent_console", Access(TOKEN).session)
        form = {"action": "stop", "csrf": Access(TOKEN).csrf}
        foreign = await http.post(
            "/inbox/t1/answer", data=form, headers={"origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        missing = await http.post("/inbox/t1/answer", data={"action": "stop"})
        assert missing.status_code == 403
        assert "CSRF token is missing or wrong" in missing.text
        wrong = await http.post("/inbox/t1/answer", data={"action": "stop", "csrf": "x" * 64})
        assert wrong.status_code == 403
        big = await http.post(
            "/inbox/t1/answer",
            content=b"a" * 300_000,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert big.status_code == 413


async def test_every_response_carries_the_security_headers(agent: Agent) -> None:
    async with client(agent) as http:
        refused = await http.get("/inbox")
        http.cookies.set("ai_agent_console", Access(TOKEN).session)
        page = await http.get("/inbox")
        for response in (refused, page):
            for name, value in SECURITY_HEADERS.items():
                assert response.headers[name] == value
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "unsafe-inline" not in page.headers["content-security-policy"]


def test_hosts_and_loopback() -> None:
    assert HOST in hosts_for("127.0.0.1", 8765)
    assert "[::1]:9" in hosts_for("::1", 9)
    assert hosts_for("192.0.2.1", 80) == frozenset()
    assert not is_loopback("192.0.2.1") and is_loopback("127.0.0.2")
    access = Access(TOKEN)
    assert access.host_ok("anything:1")  # no hosts: a remote bind answers to any name
    assert not access.token_ok(None) and not access.csrf_ok(None)
    assert not access.origin_ok("null", "127.0.0.1:1")
    assert access.origin_ok("http://127.0.0.1:1", "127.0.0.1:1")
    assert not access.origin_ok("http://127.0.0.1:1", None)
