"""The builder: intent -> request -> canonical spec -> deterministic code that runs as reviewed.

Every template is built, reviewed and activated through the real lifecycle, then called in a
real sandbox.
"""

from __future__ import annotations

import ast
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ai_agent.errors import ToolBuildError
from ai_agent.tools.maker import ToolsmakerRegistry, request_from_intent
from ai_agent.tools.maker.builder import build, code_sha256, render_code
from tests.maker.conftest import CallTool, activate


def test_intents_become_requests() -> None:
    request = request_from_intent(
        {
            "name": "t",
            "purpose": "p",
            "capabilities": ("fs_read",),
            "allowed_paths": ("data",),
            "secrets": None,
        }
    )
    assert request.capabilities == ["fs_read"] and request.allowed_paths == ["data"]
    assert request.secrets == () and request.risk == "medium" and request.code is None
    with pytest.raises(ToolBuildError, match="an intent is an object"):
        request_from_intent(["name"])  # type: ignore[arg-type]
    with pytest.raises(ToolBuildError, match=r"unknown intent field\(s\) colour"):
        request_from_intent({"name": "t", "purpose": "p", "colour": "red"})
    with pytest.raises(ToolBuildError, match="the intent needs name and purpose"):
        request_from_intent({"inputs": {}})


def test_the_same_request_gives_the_same_code_byte_for_byte() -> None:
    intent = {
        "name": "fetch",
        "purpose": 'Fetch """quoted""" pages\\n.\nSecond line.',
        "inputs": {"url": "string"},
        "outputs": ["status", "body", "status"],
        "capabilities": ["http", "secrets", "http"],
        "allowed_domains": ["B.example.com", "a.example.com"],
        "secrets": ["TOKEN"],
    }
    spec, code = build(request_from_intent(intent), 3)
    again, same = build(request_from_intent(dict(reversed(list(intent.items())))), 3)
    assert code == same and spec == again
    assert spec.capabilities == ("http", "secrets")
    assert spec.allowed_domains == ("a.example.com", "b.example.com")
    assert spec.outputs == ("status", "body")
    assert spec.code_sha256 == code_sha256(code) and spec.generated is True
    assert spec.parameters == {
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"],
        "additionalProperties": False,
    }
    compile(code, "fetch.py", "exec")  # quotes and backslashes in the purpose stay inert
    assert render_code(request_from_intent(intent)) == code
    carried, module = build(request_from_intent({**intent, "code": "# mine\n"}), 1)
    assert module == "# mine\n" and carried.generated is False


def _top_level(code: str) -> list[str]:
    return [ast.dump(node) for node in ast.parse(code).body[1:]]  # what follows the docstring


@pytest.mark.parametrize(
    "path",
    [
        'notes"""; ALLOWED_PATHS.append("elsewhere"); """',
        'notes"""\nimport os\nos.makedirs("notes/planted")\n"""',
        'notes"',
    ],
)
def test_requester_text_never_becomes_template_code(maker: ToolsmakerRegistry, path: str) -> None:
    # The paths went into the module's docstring as they were: the first closed it, and the
    # requester's statements ran in a module the review calls the template's ("low risk,
    # template"), passing validation. Now each is docstring text, and the module is the
    # template's, statement for statement.
    intent = {
        "name": "save_note",
        "purpose": "Save a note.",
        "inputs": {"path": "string", "content": "string"},
        "capabilities": ["fs_write"],
        "risk": "low",
    }
    built = maker.build_from_intent({**intent, "allowed_paths": [path]})
    assert built.ok, built.validation
    assert maker.review("save_note", built.spec.version)["summary"].startswith(
        f"save_note v{built.spec.version} (low risk, template)"
    )
    code = maker.code("save_note", built.spec.version)
    plain = render_code(request_from_intent({**intent, "allowed_paths": ["notes"]}))
    assert _top_level(code.replace(json.dumps(path), json.dumps("notes"))) == _top_level(plain)
    shown = path.replace('"""', "'''")  # three quotes in a docstring read as three apostrophes
    assert f"Files: {shown}." in (ast.get_docstring(ast.parse(code)) or "")


def test_a_purpose_ending_in_a_quote_is_the_template_classs_docstring() -> None:
    # The quote met the docstring's closing quotes: the template did not parse, and the build
    # failed with "the code does not parse", code the requester never wrote.
    code = render_code(request_from_intent({"name": "quote", "purpose": 'Say "hello"'}))
    tool_class = next(n for n in ast.parse(code).body if isinstance(n, ast.ClassDef))
    assert ast.get_docstring(tool_class) == 'Say "hello"'


async def test_the_echo_template(maker: ToolsmakerRegistry, call_tool: CallTool) -> None:
    named = activate(
        maker,
        {"name": "pick", "purpose": "Pick.", "inputs": {"a": "string"}, "outputs": ["a", "b"]},
    )
    assert (await call_tool(named, {"a": "x"}))["content"] == {"a": "x", "b": None}
    whole = activate(maker, {"name": "echo", "purpose": "Echo.", "inputs": {"a": "integer"}})
    assert (await call_tool(whole, {"a": 1}))["content"] == {"result": {"a": 1}}
    refused = await call_tool(whole, {"zzz": 1})
    assert refused["status"] == "error" and "unknown inputs: zzz" in refused["error"]


async def test_the_file_templates(
    maker: ToolsmakerRegistry, call_tool: CallTool, workspace: Path
) -> None:
    writer = activate(
        maker,
        {
            "name": "save",
            "purpose": "Save a report.",
            "inputs": {
                "path": {"type": "string", "default": ""},
                "content": {"type": "string", "default": ""},
            },
            "capabilities": ["fs_write"],
            "allowed_paths": ["reports"],
        },
    )
    saved = await call_tool(writer, {"path": "reports/2024/q1.txt", "content": "revenue up"})
    assert saved["content"] == {"path": "reports/2024/q1.txt", "written": 10}
    assert (workspace / "reports" / "2024" / "q1.txt").read_text() == "revenue up"
    default = await call_tool(writer, {})
    assert default["content"]["path"] == "reports/output.txt"
    outside = await call_tool(writer, {"path": "../x.txt", "content": "x"})
    assert "path must be relative to the workspace" in outside["error"]
    sideways = await call_tool(writer, {"path": "other/x.txt", "content": "x"})
    assert "path is outside the allowed paths reports" in sideways["error"]

    reader = activate(
        maker,
        {
            "name": "load",
            "purpose": "Read a report.",
            "inputs": {"path": {"type": "string", "default": ""}},
            "capabilities": ["fs_read"],
            "allowed_paths": ["reports"],
        },
    )
    assert (await call_tool(reader, {"path": "reports/2024/q1.txt"}))["content"] == {
        "path": "reports/2024/q1.txt",
        "content": "revenue up",
    }
    assert (await call_tool(reader, {}))["content"] == {
        "entries": {"reports": ["2024", "output.txt"]}
    }


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str | None]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
        body = b'{"price": 3}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    _Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


async def test_the_http_template_sends_its_secret_through_the_broker(
    maker: ToolsmakerRegistry,
    call_tool: CallTool,
    server: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRICES_TOKEN", "s3cret")
    port = server.server_address[1]
    tool = activate(
        maker,
        {
            "name": "prices",
            "purpose": "Fetch prices.",
            "inputs": {"url": "string"},
            "capabilities": ["http", "secrets"],
            "allowed_domains": [f"127.0.0.1:{port}"],
            "secrets": ["PRICES_TOKEN"],
        },
    )
    result = await call_tool(tool, {"url": f"http://127.0.0.1:{port}/prices?q=1"})
    assert result["content"] == {"status": 200, "body": '{"price": 3}'}
    assert _Recorder.seen == [{"path": "/prices?q=1", "auth": "Bearer s3cret"}]
    assert tool.requires_env == ("PRICES_TOKEN",)
