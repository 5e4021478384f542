"""The storage page: how large the database is, its largest runs, and a prune with a preview.

A prune is chosen as on the command line (``ai-agent prune --older-than DAYS`` or
``--keep-last N``), shown first as a preview (which runs would be pruned, which are kept and
why), and done only when the person confirms that same preview. Each run is pruned by
``RunArchive.prune`` (the command line's path: its latest checkpoint stays, so it can still be
looked at; its earlier checkpoints and its recording go), and the space is reclaimed once at
the end.

Never pruned from here, whatever the selection: a run paused at the gate (it waits for a
person; its recording is how its decision will be understood later), and a run whose row says
``running`` (it is running now, or its process died and the outcome of its last tool call is
unknown: a person has to look at it first).

The confirmation carries a digest of the previewed runs. If the runs the selection names have
changed since (a run finished, a new one arrived), nothing is pruned and the new preview is
shown: a person confirms exactly what they saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ai_agent.checkpoints.sizes import run_sizes
from ai_agent.console.base import read_form
from ai_agent.errors import AgentError
from ai_agent.graph.prune import database_bytes, select_runs

if TYPE_CHECKING:
    from starlette.requests import Request

    from ai_agent.checkpoints import RunRecord
    from ai_agent.console.base import Console
    from ai_agent.graph import RunArchive

__all__ = ["PROTECTED", "PrunePreview", "preview", "routes"]

PROTECTED = {
    "paused": "paused at the gate, waiting for a person",
    "running": "running, or its process died with the outcome of its last step unknown",
}
"""Statuses a prune from the console never touches, with the reason the preview shows."""

LARGEST = 10


@dataclass(frozen=True)
class PrunePreview:
    """What a prune would do: the runs it prunes, those it keeps (and why), and the digest."""

    selector: dict[str, str]
    prune: list[RunRecord] = field(default_factory=list)
    kept: list[tuple[RunRecord, str]] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """Names the previewed runs and their last change: the confirmation must match it."""
        text = "\n".join(f"{r['thread_id']} {r['updated_at']!r}" for r in self.prune)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def routes(bound: Any) -> list[Route]:
    """The page and its prune, handlers wrapped by the app's ``bound``."""
    return [
        Route("/storage", bound(_page)),
        Route("/storage/prune", bound(_prune), methods=["POST"]),
    ]


def _selector(values: Any) -> dict[str, str] | str | None:
    """``older_than`` or ``keep_last`` from a query or a form; a problem in words; None."""
    older, keep = values.get("older_than", "").strip(), values.get("keep_last", "").strip()
    if older and keep:
        return "choose one: runs idle for some days, or all but the latest N"
    try:
        if older:
            return {"older_than": f"{float(older):g}"} if float(older) >= 0 else "days: 0 or more"
        if keep:
            return {"keep_last": str(int(keep))} if int(keep) >= 0 else "N: 0 or more"
    except ValueError:
        return "days must be a number, and N a whole number"
    return None


async def preview(archive: RunArchive, selector: dict[str, str]) -> PrunePreview:
    """The runs a prune with this selector would prune, and those it keeps."""
    older = float(selector["older_than"]) if "older_than" in selector else None
    keep = int(selector["keep_last"]) if "keep_last" in selector else None
    chosen = await select_runs(archive.store, None, older, keep)
    result = PrunePreview(selector)
    for record in chosen:
        why = PROTECTED.get(record["status"])
        if why is None:
            result.prune.append(record)
        else:
            result.kept.append((record, why))
    return result


async def _facts(archive: RunArchive) -> dict[str, Any]:
    location = archive.database.location
    sizes = None
    if isinstance(location, Path) and location.exists():
        sizes = await asyncio.to_thread(run_sizes, location, LARGEST)
    records = {r["thread_id"]: r for r in await archive.list_runs(limit=None)}
    largest = [
        {"thread_id": t, "bytes": b, "checkpoints": c, "record": records.get(t)}
        for t, b, c in sizes or []
    ]
    return {
        "size": database_bytes(location),
        "where": archive.database.describe(),
        "runs": len(records),
        "largest": largest,
        "sizes_known": sizes is not None,
    }


async def _page(console: Console, request: Request) -> Response:
    selector = _selector(request.query_params)
    problem = selector if isinstance(selector, str) else None
    plan = await preview(console.archive, selector) if isinstance(selector, dict) else None
    return await _render(console, request, plan, problem, request.query_params.get("done"))


async def _render(
    console: Console,
    request: Request,
    plan: PrunePreview | None,
    problem: str | None,
    done: str | None,
    code: int = 200,
) -> HTMLResponse:
    facts = await _facts(console.archive)
    return console.page(
        request, "storage.html", code, facts=facts, plan=plan, problem=problem, done=done
    )


async def _prune(console: Console, request: Request) -> Response:
    form = await read_form(console, request)
    selector = _selector(form)
    if not isinstance(selector, dict):
        return await _render(console, request, None, selector or "choose what to prune", None, 400)
    plan = await preview(console.archive, selector)
    if form.get("digest") != plan.digest:
        problem = "the runs this would prune changed since the preview; look at it again"
        return await _render(console, request, plan, problem, None, 409)
    pruned, freed = await _apply(console.archive, plan)
    query = urlencode({"done": f"pruned {pruned} run(s); {freed / 1024:.0f} KiB reclaimed"})
    return RedirectResponse(f"/storage?{query}", status_code=303)


async def _apply(archive: RunArchive, plan: PrunePreview) -> tuple[int, int]:
    """Prune each previewed run (the command line's path), then reclaim the space once."""
    before = database_bytes(archive.database.location)
    pruned = 0
    for record in plan.prune:
        try:
            report = await archive.prune(record["thread_id"], vacuum=False)
        except AgentError:
            continue  # gone since the preview: nothing of it to prune
        pruned += len(report.pruned)
    # Another connection mid-transaction makes VACUUM fail: the space is reclaimed next time.
    if pruned:
        with contextlib.suppress(sqlite3.OperationalError):
            await archive.store.vacuum()
    return pruned, max(0, before - database_bytes(archive.database.location))
