"""The validator: a filter and a review aid (the OS sandbox is the boundary).

It must refuse the classic escapes a model writes, hardened beyond the literal list of the spec,
and still accept ordinary code: dataclasses, json/re/datetime, a method named ``evaluate``.
"""

from __future__ import annotations

import textwrap

import pytest

from ai_agent.tools.maker import ToolBuildRequest, validate_code, validate_request


def module(body: str, imports: str = "") -> str:
    """A module with ``imports`` and a GeneratedTool whose execute runs ``body``."""
    return (
        textwrap.dedent(imports).strip()
        + "\n\n\nclass GeneratedTool:\n    def execute(self, **kwargs):\n"
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    )


BENIGN = {
    "dataclasses_json_re_datetime": '''
        import json
        import re
        from dataclasses import dataclass, field
        from datetime import datetime, timedelta, timezone


        @dataclass
        class Entry:
            name: str
            tags: list[str] = field(default_factory=list)

            def __post_init__(self):
                self.name = self.name.strip()


        class GeneratedTool:
            """Parse entries."""

            def evaluate(self, text):
                return [Entry(m.group(1)) for m in re.finditer(r"(\\w+)", text)]

            def execute(self, text, days=1):
                start = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(days=days)
                entries = self.evaluate(text)
                return json.dumps({"start": start.isoformat(), "n": len(entries)})
        ''',
    "collections_math_statistics": """
        import math
        import statistics
        from collections import Counter, defaultdict
        from collections.abc import Iterable


        def mean_of(values: Iterable[float]) -> float:
            return statistics.fmean(values)


        class GeneratedTool:
            def execute(self, numbers):
                counts = Counter(numbers)
                groups = defaultdict(list)
                for n in numbers:
                    groups[n % 2].append(n)
                return {"mean": mean_of(numbers), "sqrt": math.sqrt(len(numbers)),
                        "top": counts.most_common(1), "odd": groups[1]}
        """,
    "getattr_with_a_constant": """
        class GeneratedTool:
            def execute(self, obj=None):
                return getattr(obj, "real", 0) + len(str(self).__len__.__name__)
        """,
    "os_path_helpers": """
        import os
        from os import path


        class GeneratedTool:
            def execute(self, name):
                return {"joined": os.path.join("a", name), "base": path.basename(name)}
        """,
    "private_helpers_of_its_own": """
        class GeneratedTool:
            _cache = {}

            def _key(self, text):
                return text.lower()

            def execute(self, text):
                self._cache[self._key(text)] = True
                return sorted(self._cache)
        """,
}


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_ordinary_code_passes(name: str) -> None:
    report = validate_code(textwrap.dedent(BENIGN[name]))
    assert report.ok, report.errors


ESCAPES = {
    # The spec's literal list.
    "import_subprocess": ("import subprocess", "subprocess.run(['sh'])"),
    "import_socket": ("import socket", "socket.socket()"),
    "import_ctypes": ("import ctypes", "ctypes.CDLL(None)"),
    "import_importlib": ("import importlib", "importlib.import_module('os')"),
    "import_pathlib": ("from pathlib import Path", "Path('/etc/passwd').read_text()"),
    "eval": ("", "eval('1')"),
    "exec": ("", "exec('x = 1')"),
    "dunder_import": ("", "__import__('os')"),
    # Beyond it.
    "compile": ("", "compile('1', 'x', 'eval')"),
    "eval_by_alias": ("", "f = eval\nf('1')"),
    "builtins_module": ("import builtins", "builtins.eval('1')"),
    "dunder_builtins": ("", "__builtins__['eval']('1')"),
    "subclasses_walk": ("", "().__class__.__bases__[0].__subclasses__()"),
    "function_globals": ("", "(lambda: 0).__globals__"),
    "getattr_computed": ("", "getattr(self, '__cl' + 'ass__')"),
    "getattr_dunder": ("", "getattr(self, '__class__')"),
    "getattr_os_system": ("import os", "getattr(os, 'system')('sh')"),
    "format_string_dunder": ("", "'{0.__class__}'.format(self)"),
    "fstring_dunder": ("", "f'{self.__class__}'"),
    "os_system": ("import os", "os.system('sh')"),
    "os_popen_aliased_import": ("import os as o", "o.popen('sh')"),
    "from_os_import_execv": ("from os import execv", "execv('/bin/sh', ['sh'])"),
    "os_fork": ("import os", "os.fork()"),
    "os_kill": ("import os", "os.kill(1, 9)"),
    "os_open_fd": ("import os", "os.open('/x', 0)"),
    "os_through_os_path": ("import os", "os.path.os.system('sh')"),
    "os_through_random": ("import random", "random._os.system('sh')"),
    "private_import": ("from random import _os", "_os.system('sh')"),
    "sys_through_a_module": ("import typing", "typing.sys.modules"),
    "module_aliased": ("import random", "r = random\nr._os.system('sh')"),
    "module_passed": ("import os", "return getattr_of(os)"),
    "metaclass": ("", "class M(type): pass\nclass X(metaclass=M): pass"),
    "relative_import": ("from . import x", "x"),
    "star_import": ("from os import *", "system('sh')"),
    "unknown_module": ("import requests", "requests.get('http://x')"),
    "breakpoint": ("", "breakpoint()"),
    "vars_globals": ("", "vars()['x'] = globals()"),
    "setattr": ("", "setattr(self, 'x', 1)"),
    "threading": ("import threading", "threading.Thread(target=print).start()"),
    "sys_module": ("import sys", "sys.modules['os'].system('sh')"),
    "signal": ("import signal", "signal.signal(15, signal.SIG_IGN)"),
    "async_execute": ("", "pass"),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_attempts_are_refused(name: str) -> None:
    imports, body = ESCAPES[name]
    code = module(body, imports)
    if name == "async_execute":
        code = "class GeneratedTool:\n    async def execute(self, **kwargs):\n        pass\n"
    report = validate_code(code, capabilities=["fs_read", "fs_write"])
    assert not report.ok, name


def test_messages_name_the_attempt() -> None:
    def errors(code: str, **kwargs: object) -> list[str]:
        return validate_code(code, **kwargs).errors  # type: ignore[arg-type]

    assert errors(module("random._os.system('x')", "import random")) == [
        "line 6: the private attribute '_os' of a module is not allowed"
    ]
    assert errors(module("os.path.os.system('x')", "import os")) == [
        "line 6: reaching the module 'os' through another module is forbidden"
    ]
    assert errors(module("f = os\nf.system('x')", "import os")) == [
        "line 6: the module 'os' may only be used as os.name"
    ]
    assert errors(module("getattr(os, 'system')('sh')", "import os")) == [
        "line 6: os.system is forbidden in generated tools"
    ]
    assert errors(module("return 1", "import requests")) == [
        "line 1: import of 'requests' is not allowed; generated tools may import only standard "
        "modules on the toolsmaker's list"
    ]
    assert errors("x = 1") == ["the module must define exactly one top-level class GeneratedTool"]
    assert errors("class GeneratedTool:\n    pass\nclass GeneratedTool:\n    pass") == [
        "GeneratedTool is defined more than once"
    ]
    assert errors("class GeneratedTool:\n    def run(self):\n        pass") == [
        "GeneratedTool has no execute(self, **kwargs) method"
    ]
    assert errors("class GeneratedTool:\n    def execute(text):\n        pass") == [
        "execute must be an instance method: execute(self, **kwargs)"
    ]
    assert errors(
        "class GeneratedTool:\n    def execute(self, a):\n        pass", inputs=["a", "b"]
    ) == ["execute takes neither **kwargs nor the inputs b"]
    assert errors("def (")[0].startswith("the code does not parse: ")
    assert errors("x" * 70_000) == ["the code is longer than 64000 characters"]
    # A lone CR ends a line for Python only: a reviewer could read the import as a comment.
    hidden = "# counts words\rimport json\nclass GeneratedTool:\n    def execute(self, **k):\n"
    assert errors(hidden + "        return json.dumps(k)\n") == [
        "line 1: a carriage return that is not followed by a line feed ends a line for Python "
        "but not on every screen; write line ends as \\n or \\r\\n"
    ]
    assert errors(hidden.replace("\r", "\r\n") + "        return json.dumps(k)\n") == []


def test_capabilities_must_match_what_the_code_does() -> None:
    reads = module("return open('data/x').read()")
    assert validate_code(reads, capabilities=["fs_read"]).ok
    assert validate_code(reads).errors == [
        "line 6: the code opens files but declares neither fs_read nor fs_write"
    ]
    writes = module("open('out/x', 'w').write('x')")
    assert validate_code(writes, capabilities=["fs_read"]).errors == [
        "line 6: the code writes files but fs_write is not declared"
    ]
    computed = module("mode = 'w'\nopen('out/x', mode=mode)")
    report = validate_code(computed, capabilities=["fs_write"])
    assert report.ok and report.warnings[0] == (
        "line 7: open() with a computed mode; check what it writes"
    )
    removes = module("os.remove('out/x')", "import os")
    assert (
        "os.remove changes files but fs_write is not declared"
        in validate_code(removes, capabilities=["fs_read"]).errors[0]
    )
    http = module("return self.http.get('https://example.com')")
    assert validate_code(http, capabilities=["http"]).ok
    assert validate_code(http).errors == [
        "line 6: the code uses self.http but the http capability is not declared"
    ]
    secret = module("return self.secrets['K']")
    assert validate_code(secret).errors == [
        "line 6: the code reads self.secrets but declares no secrets"
    ]
    report = validate_code(module("global X\nX = 1"), capabilities=["fs_write", "http", "secrets"])
    assert report.ok
    assert report.warnings == [
        "line 6: global state does not survive calls",
        "writes files in its allowed paths",
        "sends HTTP requests (through the engine's broker)",
        "receives secrets in its environment",
    ]
    assert report.to_json()["note"] == "a filter and review aid; the OS sandbox is the boundary"


def request(**fields: object) -> ToolBuildRequest:
    values: dict[str, object] = {"name": "tool", "purpose": "Does a thing."}
    values.update(fields)
    return ToolBuildRequest(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"name": "1tool"}, "name '1tool' is invalid"),
        ({"name": "x" * 49}, "is invalid"),
        ({"purpose": "  "}, "purpose is empty"),
        ({"purpose": "x" * 2001}, "purpose is longer than 2000 characters"),
        ({"inputs": ["a"]}, "inputs must be an object"),
        ({"inputs": {"_a": "string"}}, "input name '_a' is not a plain identifier"),
        ({"inputs": {"self": "string"}}, "an input may not be called 'self'"),
        ({"inputs": {"a": "str"}}, "input 'a' has type 'str'"),
        ({"inputs": {"a": {"type": ["string", "blob"]}}}, "input 'a' has type 'blob'"),
        ({"inputs": {f"a{i}": "string" for i in range(33)}}, "at most 32 inputs"),
        ({"outputs": "result"}, "outputs must be a list"),
        ({"outputs": ["not an id"]}, "outputs: 'not an id' is not an identifier"),
        ({"capabilities": ["root"]}, "capabilities: 'root' is unknown"),
        ({"capabilities": ["fs_read"]}, "the fs_read or fs_write capability needs allowed_paths"),
        ({"allowed_paths": ["data"]}, "allowed_paths given without the fs_read or fs_write"),
        ({"capabilities": ["http"]}, "the http capability needs allowed_domains"),
        ({"capabilities": ["secrets"]}, "the secrets capability needs secrets"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["../x"]}, "climbs out of the workspace"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["/etc"]}, "is absolute"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["~/x"]}, "is absolute"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["."]}, "is the whole workspace"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["a/.git"]}, "names a hidden entry"),
        ({"capabilities": ["fs_read"], "allowed_paths": ["a\\b"]}, "a NUL byte or a backslash"),
        ({"capabilities": ["fs_read"], "allowed_paths": [""]}, "is not a path"),
        ({"capabilities": ["http"], "allowed_domains": ["http://x.com"]}, "must be a host"),
        ({"capabilities": ["http"], "allowed_domains": ["a*.x.com"]}, "wildcard may only lead"),
        ({"capabilities": ["http"], "allowed_domains": ["*.10.0.0.1"]}, "goes with host names"),
        ({"capabilities": ["http"], "allowed_domains": ["x.com:0"]}, "has an invalid port"),
        ({"capabilities": ["http"], "allowed_domains": ["bad_host"]}, "is not a host name"),
        ({"capabilities": ["http"], "allowed_domains": ["1.2.3"]}, "is not a valid address"),
        ({"capabilities": ["http"], "allowed_domains": [""]}, "is not a host"),
        ({"capabilities": ["secrets"], "secrets": ["lower"]}, "is not an environment variable"),
        ({"capabilities": ["secrets"], "secrets": ["MAMBA_API_KEY"]}, "the engine's own"),
        ({"capabilities": ["secrets"], "secrets": ["LD_PRELOAD"]}, "changes how programs run"),
        ({"capabilities": ["secrets"], "secrets": ["PYTHONPATH"]}, "changes how programs run"),
        ({"capabilities": ["secrets"], "secrets": ["PATH"]}, "changes how programs run"),
        ({"risk": "none"}, "risk 'none' is not one of low, medium, high"),
        ({"code": 42}, "code must be a string"),
    ],
)
def test_request_fields_are_checked(fields: dict[str, object], error: str) -> None:
    report = validate_request(request(**fields))
    assert not report.ok
    assert any(error in e for e in report.errors), report.errors


def test_a_good_request_and_a_taken_name() -> None:
    good = request(
        inputs={"url": "string", "retries": {"type": "integer", "default": 1}},
        capabilities=["http", "secrets"],
        allowed_domains=["api.example.com", "*.example.org", "127.0.0.1:8080", "[::1]:9000"],
        secrets=["EXAMPLE_TOKEN"],
        risk="high",
    )
    assert validate_request(good).ok
    assert validate_request(good, reserved={"tool"}).errors == [
        "name 'tool' is taken by a tool that is not generated"
    ]
