"""Fixtures of the toolsmaker tests: a registry in ``tmp_path``, approved tools, canaries.

``approve_tool`` goes through the real lifecycle (build -> validate -> review -> approve ->
activate) with a *careless reviewer*: whatever is built is approved. ``careless_validator``
additionally lets code through that the AST validator would refuse, so the confinement tests
show what the OS stops when both the filter and the person fail.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry, ValidationReport
from ai_agent.tools.maker import registry as registry_module
from ai_agent.tools.spec import ToolSpec

CANARY = "canary-4d1f9b2e-do-not-leak"
SHOUT = "class GeneratedTool:\n    def execute(self, text):\n        return text.upper()\n"
ApproveTool = Callable[..., ToolSpec]
CallTool = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def workspace() -> Path:
    """The engine's working directory (conftest's private ``work`` dir), as the sandbox base."""
    return Path.cwd()


@pytest.fixture
def maker(workspace: Path, tmp_path: Path) -> ToolsmakerRegistry:
    return ToolsmakerRegistry(
        workspace / ".agents" / "toolsmaker",
        base_dir=workspace,
        limits=SandboxLimits(timeout=10),
    )


@pytest.fixture
def careless_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code check passes everything (a validator bypass nobody noticed)."""
    monkeypatch.setattr(
        registry_module, "validate_code", lambda *args, **kwargs: ValidationReport()
    )


def tool_code(body: str, *, imports: str = "import os") -> str:
    """A GeneratedTool whose execute runs ``body`` (indented for you)."""
    return (
        f"{imports}\n\n\nclass GeneratedTool:\n    def execute(self, **kwargs):\n"
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    )


def activate(maker: ToolsmakerRegistry, intent: dict[str, Any]) -> ToolSpec:
    """Build ``intent`` and take it through review to active, as a person would."""
    built = maker.build_from_intent(intent)
    assert built.ok, built.validation
    maker.approve(built.spec.name, built.spec.version)
    return maker.activate(built.spec.name, built.spec.version)


@pytest.fixture
def approve_tool(maker: ToolsmakerRegistry) -> ApproveTool:
    counter = iter(range(1, 1000))

    def make(
        body: str | None = None,
        *,
        code: str | None = None,
        limits: SandboxLimits | None = None,
        imports: str = "import os",
        **intent: Any,
    ) -> ToolSpec:
        intent.setdefault("name", f"probe{next(counter)}")
        intent.setdefault("purpose", "A probe a careless reviewer approved.")
        if code is None and body is not None:
            code = tool_code(body, imports=imports)
        if code is not None:
            intent["code"] = code
        if limits is not None:
            maker.limits = limits
        built = maker.build_from_intent(intent)
        assert built.ok, built.validation
        maker.approve(built.spec.name, built.spec.version, by="careless reviewer")
        return maker.activate(built.spec.name, built.spec.version, by="careless reviewer")

    return make


@pytest.fixture
def call_tool() -> CallTool:
    async def call(spec: ToolSpec, args: dict[str, Any] | None = None) -> dict[str, Any]:
        result = spec.fn(dict(args or {}), {"call_id": "c1", "thread_id": "t1"})
        assert not isinstance(result, dict)
        return dict(await result)

    return call


@pytest.fixture
def canaries(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Secrets the engine can see and a generated tool must not: files and environment."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(CANARY)
    home_secret = Path(os.environ["HOME"]) / ".ssh_key"
    home_secret.write_text(CANARY)
    project_secret = workspace / "project_secret.txt"
    project_secret.write_text(CANARY)
    monkeypatch.setenv("ENGINE_API_KEY", CANARY)
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
    return {"outside": secret, "home": home_secret, "project": project_secret}
