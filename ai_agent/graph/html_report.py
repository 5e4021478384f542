"""One self-contained HTML page for a run: no network, no external scripts, styles or fonts.

The page is written by Python (every value HTML-escaped) and reads on its own; a small inline
script adds a summary line and a filter for the timeline. The run's data is embedded as JSON
(with ``<`` escaped, so no value can end the script element).

Values come from the model and the tools: before it is HTML-escaped, each is rendered with
`ai_agent.visible.visible` (JSON with `ai_agent.visible.json_visible`), so a bidi override or a
zero-width character cannot make a command or an answer read differently in the browser.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from ai_agent.state import STAGES
from ai_agent.visible import Mode, json_visible, link_target, visible

__all__ = ["STAGES", "pipeline_svg", "render_html"]


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;
background:#f6f7fb}
header{background:#23263a;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:20px}
main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde1ec;border-radius:8px;margin:16px 0;padding:14px 18px}
h2{font-size:16px;margin:0 0 10px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #eceef4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f1f3f9;padding:8px;border-radius:6px;white-space:pre-wrap;margin:4px 0;
font-size:12px}.status{display:inline-block;padding:1px 8px;border-radius:10px;background:#e4e8f5}
.status.completed{background:#d3f2d9}.status.paused{background:#fff0c2}
.status.failed,.status.error{background:#ffd9d9}.status.cancelled{background:#eee}
.msg{border-left:3px solid #c9cfe0;padding:2px 10px;margin:6px 0}
.msg.assistant{border-color:#6a7fd8}
.msg.tool{border-color:#3aa676}.msg.user{border-color:#d8a13a}.role{font-weight:600;font-size:12px}
#js-summary{font-weight:600}input{padding:4px 8px;margin:0 0 8px;width:260px}
.path span{display:inline-block;margin:2px;padding:1px 6px;border-radius:4px;background:#e9ecf6}
"""

_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('run-data').textContent);
  var tokens = (data.usage && data.usage.total_tokens) || 0;
  var summary = document.getElementById('js-summary');
  summary.textContent = data.timeline.length + ' stage runs, ' + data.tool_calls.length +
    ' tool call(s), ' + data.model_calls.length + ' model request(s), ' + tokens + ' tokens';
  summary.setAttribute('data-rendered', 'yes');
  var filter = document.getElementById('timeline-filter');
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    var rows = document.querySelectorAll('#timeline tbody tr');
    for (var i = 0; i < rows.length; i++) {
      rows[i].hidden = q !== '' && rows[i].textContent.toLowerCase().indexOf(q) < 0;
    }
  });
})();
"""


def _e(value: Any, mode: Mode = "lines") -> str:
    """A value as HTML text: exact lines by default, ``"text"`` for prose (answers, messages)."""
    return html.escape("" if value is None else visible(str(value), mode), quote=True)


def _j(value: Any) -> str:
    """A value as HTML-escaped JSON."""
    encoded = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return html.escape(json_visible(encoded), quote=True)


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], table_id: str = "") -> str:
    attr = f' id="{table_id}"' if table_id else ""
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table{attr}><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def pipeline_svg(visits: dict[str, int]) -> str:
    """The nine stages as boxes, visited ones coloured, with how often each ran."""
    width, gap = 104, 16
    parts = []
    for i, stage in enumerate(STAGES):
        x = 10 + i * (width + gap)
        count = visits.get(stage, 0)
        fill = "#cfe8d6" if count else "#eceef4"
        parts.append(
            f'<g><rect x="{x}" y="20" width="{width}" height="44" rx="8" fill="{fill}" '
            f'stroke="#7b849c"/><text x="{x + width / 2}" y="40" text-anchor="middle" '
            f'font-size="13">{stage}</text><text x="{x + width / 2}" y="57" '
            f'text-anchor="middle" font-size="11">x{count}</text></g>'
        )
        if i:
            parts.append(
                f'<line x1="{x - gap}" y1="42" x2="{x - 2}" y2="42" stroke="#7b849c" '
                'marker-end="url(#arrow)"/>'
            )
    draft_x = 10 + 1 * (width + gap) + width / 2
    gate_x = 10 + 6 * (width + gap) + width / 2
    parts.append(
        f'<path d="M{gate_x} 64 C{gate_x} 100,{draft_x} 100,{draft_x} 66" fill="none" '
        'stroke="#6a7fd8" stroke-dasharray="4 3" marker-end="url(#arrow)"/>'
        f'<text x="{(gate_x + draft_x) / 2}" y="98" text-anchor="middle" font-size="11">'
        "continue (next cycle)</text>"
    )
    total = 20 + len(STAGES) * (width + gap)
    return (
        f'<svg role="img" aria-label="pipeline" '
        f'viewBox="0 0 {total} 110" width="100%"><defs><marker id="arrow" viewBox="0 0 10 10" '
        'refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
        '<path d="M0 0L10 5L0 10z" fill="#7b849c"/></marker></defs>' + "".join(parts) + "</svg>"
    )


def _when(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _summary(r: dict[str, Any]) -> str:
    usage = r["usage"]
    rows = [
        ("Task", _e(r["task"])),
        ("Status", f'<span class="status {_e(r["status"])}">{_e(r["status"])}</span>'),
        ("Thread", f"<code>{_e(r['thread_id'])}</code>"),
        (
            "Origin",
            _e(r["origin"])
            + (f" of <code>{_e(r['parent_thread_id'])}</code>" if r["parent_thread_id"] else ""),
        ),
        ("Started", _e(_when(r["created_at"]))),
        ("Iterations", _e(r["iterations"])),
        (
            "Tokens",
            _e(
                f"{usage['total_tokens']} ({usage['prompt_tokens']} prompt, "
                f"{usage['completion_tokens']} completion)"
            ),
        ),
        *_family_rows(r.get("family")),
        *_pipeline_rows(r.get("fields"), r.get("unread")),
        ("System prompt", f"<pre>{_e(r['system_prompt'])}</pre>"),
        ("Answer", f"<pre>{_e(r['final_text'] or r['error'] or '', 'text')}</pre>"),
    ]
    if r.get("output") is not None:  # a typed run: its answer as data
        typed = json.dumps(r["output"], indent=2, ensure_ascii=False)
        rows.append(("Output", f'<pre class="output">{_e(typed, "text")}</pre>'))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return (
        f'<section id="summary"><h2>Run</h2><p id="js-summary"></p><table>{body}</table></section>'
    )


def _pipeline_rows(
    fields: dict[str, Any] | None, unread: dict[str, Any] | None
) -> list[tuple[str, str]]:
    """A pipeline's own state fields, or the note that they were not read (no --pipeline)."""
    rows = [
        (f"<code>{_e(name)}</code>", f"<pre>{_j(value)}</pre>")
        for name, value in (fields or {}).items()
    ]
    if unread:
        rows.append(("Pipeline", _e(unread["note"])))
    return rows


def _family_rows(family: dict[str, Any] | None) -> list[tuple[str, str]]:
    """A child run's parent step, and the child runs this one spawned (subagents)."""
    if not family:
        return []

    def step(link: dict[str, Any]) -> str:
        at = f" at call {_e(link['call_id'])}" if link.get("call_id") else ""
        return f"<code>{_e(link['thread_id'])}</code>{at} ({_e(link['status'])})"

    rows = []
    if family.get("parent"):
        rows.append(("Parent", step(family["parent"])))
    if family.get("children"):
        rows.append(("Children", "<br>".join(step(c) for c in family["children"])))
    return rows


def _sources(r: dict[str, Any]) -> str:
    """The sources the answer cites: each a link where its URI is one a person may open."""
    cited = [c for c in r.get("citations") or [] if isinstance(c, dict)]
    if not cited:
        return ""
    items = []
    for c in cited:
        label = _e(c.get("path")) + (f" #{_e(c['section'])}" if c.get("section") else "")
        target = link_target(c.get("uri"))
        chip = f'<a href="{_e(target)}">{label}</a>' if target else label
        claims = "".join(f"<li>{_e(claim)}</li>" for claim in c.get("claims") or [])
        items.append(f"<li><code>[{_e(c.get('id'))}]</code> {chip}<ul>{claims}</ul></li>")
    return f'<section id="sources"><h2>Sources</h2><ul>{"".join(items)}</ul></section>'


def _path(r: dict[str, Any]) -> str:
    steps = "".join(f"<span>{_e(s)}</span>" for s in r["path"])
    return (
        '<section id="path"><h2>Path through the graph</h2>'
        + pipeline_svg(r["visits"])
        + f'<div class="path">{steps}</div></section>'
    )


def _timeline(r: dict[str, Any]) -> str:
    rows = [
        (
            _e(t["step"]),
            _e(t["stage"]),
            _e(t["iteration"]),
            f'<span class="num">{t["duration_ms"]:.1f}</span>',
            _e(t["tokens"]),
            _e(t["tool"]),
            f'<span class="status {_e(t["status"])}">{_e(t["status"])}</span>',
            "" if t["gate_score"] is None else f"{t['gate_score']:.2f}",
            _e(t["detail"]),
        )
        for t in r["timeline"]
    ]
    return (
        '<section><h2>Timeline</h2><input id="timeline-filter" placeholder="filter the timeline" '
        'aria-label="filter the timeline">'
        + _table(
            ("step", "stage", "iter", "ms", "tokens", "tool", "status", "gate", "detail"),
            rows,
            "timeline",
        )
        + "</section>"
    )


def _input(call: dict[str, Any]) -> str:
    """A call's arguments; for a call a person edited, the model's arguments under them."""
    shown = f"<pre>{_j(call['args'])}</pre>"
    if "edited_from" in call:
        shown += f"<pre>edited from {_j(call['edited_from'])}</pre>"
    return shown


def _tools(r: dict[str, Any]) -> str:
    rows = [
        (
            _e(c["iteration"]),
            f"<code>{_e(c['call']['name'])}</code>",
            _input(c["call"]),
            f'<span class="status {_e(c["result"]["status"])}">{_e(c["result"]["status"])}</span>',
            f"<pre>{_j(c['result'].get('content', c['result'].get('error')))}</pre>",
            _e(c["duration_ms"]),
        )
        for c in r["tool_calls"]
    ]
    table = (
        _table(("iter", "tool", "input", "status", "output", "ms"), rows)
        if rows
        else "<p>No tool calls.</p>"
    )
    return f'<section id="tools"><h2>Tool calls</h2>{table}</section>'


def _gates(r: dict[str, Any]) -> str:
    rows = [
        (_e(g["iteration"]), f"{g['gate_score'] or 0:.2f}", _e(g["status"]), _e(g["detail"]))
        for g in r["gates"]
    ]
    waiting = r["pending_gate"]
    if waiting and not any(g["status"] == "paused" for g in r["gates"]):
        # The gate that waits has not returned, so no trace line of its own says it ran.
        codes = ", ".join(str(i.get("code", "")) for i in waiting.get("issues", []))
        severity = waiting.get("severity") or 0
        rows.append((_e(waiting.get("iteration", "")), f"{severity:.2f}", "paused", _e(codes)))
    parts = [
        _table(("iter", "severity", "decision", "issues"), rows)
        if rows
        else "<p>The gate never ran.</p>"
    ]
    if r["pending_gate"]:
        parts.append(f"<h3>Waiting for a plan</h3><pre>{_e(r['pending_gate']['prompt'])}</pre>")
    if r.get("waiting_node"):  # a node of the pipeline called interrupt(): it waits for an answer
        parts.append(f"<h3>Waiting for an answer</h3><pre>{_e(r['waiting_node']['prompt'])}</pre>")
    plans = [
        (_e(p["iteration"]), _e(p["source"]), f"<pre>{_j(p['plan'])}</pre>") for p in r["plans"]
    ]
    parts.append(
        "<h3>Plans</h3>"
        + (_table(("iter", "from", "plan"), plans) if plans else "<p>No plans.</p>")
    )
    return '<section id="gates"><h2>Gate decisions and plans</h2>' + "".join(parts) + "</section>"


def _conversation(r: dict[str, Any]) -> str:
    items = []
    for m in r["messages"]:
        calls = "".join(
            f"<pre>calls {_e(c['name'])} {_j(c['args'])}</pre>" for c in m.get("tool_calls", [])
        )
        label = (
            m["role"]
            + (f" ({m['kind']})" if m.get("kind") else "")
            + (f" {m['name']}" if m.get("name") else "")
        )
        items.append(
            f'<div class="msg {_e(m["role"])}"><div class="role">{_e(label)}</div>'
            f"<pre>{_e(m.get('content'), 'text')}</pre>{calls}</div>"
        )
    return '<section id="conversation"><h2>Conversation</h2>' + "".join(items) + "</section>"


def _history(r: dict[str, Any]) -> str:
    rows = [
        (
            _e(h["step"]),
            _e(h["stage"]),
            _e(h["time"]),
            f"<code>{_e(h['checkpoint_id'])}</code>",
            _e(h["summary"]),
        )
        for h in r["history"]
    ]
    return (
        '<section id="history"><h2>Checkpoints</h2>'
        + _table(("step", "stage", "time", "checkpoint", "what changed"), rows)
        + f"<h3>Mermaid</h3><pre>{_e(r['mermaid'])}</pre></section>"
    )


def render_html(report: dict[str, Any]) -> str:
    """The page for a run report (``Agent.run_report``)."""
    data = json_visible(json.dumps(report, ensure_ascii=False, default=str)).replace("<", "\\u003c")
    title = f"ai-agent run {report['thread_id']}"
    body = "".join(
        (
            _summary(report),
            _sources(report),
            _path(report),
            _timeline(report),
            _tools(report),
            _gates(report),
            _conversation(report),
            _history(report),
        )
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(title)}</h1><div>{_e(report['task'])}</div></header>"
        f'<main>{body}</main><script type="application/json" id="run-data">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
