"""``ai-agent tools`` and ``ai-agent output``.

``tools`` lists the catalog by category, with the approval policy in force, and reviews generated
tools (``ai-agent tools pending | show | approve | reject | activate | rollback | audit
--verify``); ``output`` prints the full text of a tool output that was clipped in a run.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import (
    Parents,
    UsageError,
    database_of,
    run_closing,
    settings_of,
    thread_arg,
)
from ai_agent.cli._printing import print_json
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.graph import ToolListing
    from ai_agent.tools.maker import BuildRecord, ToolsmakerRegistry

__all__ = ["add_commands"]

_CATEGORIES = ("read_only", "note_taking", "modification", "external")
_MEANING = {
    "auto": "runs without asking",
    "auto (unattended)": "runs without asking (unattended)",
    "confirm": "waits for a person's confirmation",
    "approve": "waits for a person's approval, with a preview",
    "deny": "never runs",
}


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``tools`` and ``output``."""
    tools = sub.add_parser(
        "tools", parents=[parents.common], help="list the tool catalog by category"
    )
    tools.add_argument("--category", choices=_CATEGORIES, help="only this category")
    tools.set_defaults(handler=_tools)
    _maker_commands(tools, parents)

    output = sub.add_parser(
        "output", parents=[parents.common], help="print a tool output that was clipped in a run"
    )
    output.add_argument("thread", type=thread_arg, help="the run's thread id")
    output.add_argument("ref", help="the output's reference (out-<iteration>-<call id>)")
    output.set_defaults(handler=_output)


def _line(t: ToolListing) -> str:
    notes = []
    if t["missing_env"]:
        notes.append(f"needs {', '.join(t['missing_env'])}")
    if not t["enabled"]:
        notes.append("disabled")
    extra = f"  ({visible('; '.join(notes))})" if notes else ""
    description = t["description"].split("\n", 1)[0]  # an MCP server's, maybe hostile
    if len(description) > 72:
        description = description[:71] + "…"
    return (
        f"  {visible(t['name']):<18} {visible(t['group'] or ''):<10} {visible(description)}{extra}"
    )


def _heading(category: str, policy: str, first_use_gate: bool) -> str:
    meaning = _MEANING.get(policy, policy)
    if category == "external" and first_use_gate and policy.startswith("auto"):
        meaning += "; the first call of each in a run waits for a person"
    return f"{category}: {meaning} (policy: {policy})"


def _tools(args: argparse.Namespace) -> int:
    # The Agent's catalog without the Agent: its model stack is not needed to list tools.
    from ai_agent.graph import tool_catalog

    catalog = tool_catalog(settings_of(args))
    listing = [t for t in catalog.listing() if not args.category or t["category"] == args.category]
    if args.json:
        print_json(listing)
        return 0
    blocks = []
    for category in _CATEGORIES:
        members = [t for t in listing if t["category"] == category]
        if not members:
            continue
        head = _heading(category, members[0]["policy"], catalog.policy.first_use_gate)
        blocks.append("\n".join([head, *(_line(t) for t in members)]))
    print("\n\n".join(blocks))
    return 0


def _output(args: argparse.Namespace) -> int:
    from ai_agent.graph import Agent

    agent = Agent(
        checkpoint_path=database_of(args).location, settings=settings_of(args), memory_path=None
    )
    text = run_closing(agent, agent.tool_output(args.thread, args.ref))
    if args.json:
        print_json({"thread_id": args.thread, "ref": args.ref, "content": text})
    else:
        print(visible(text, "text"))
    return 0


# Generated tools (the toolsmaker) ----------------------------------------------------------------
def _maker_commands(tools: Any, parents: Parents) -> None:
    """``ai-agent tools pending | show | approve | reject | activate | rollback | audit``."""
    maker = argparse.ArgumentParser(add_help=False, parents=[parents.common])
    maker.add_argument("--dir", help="the toolsmaker directory (default .agents/toolsmaker)")
    maker.add_argument("--audit-path", help="the audit log (default DIR/audit.jsonl)")
    sub = tools.add_subparsers(dest="tools_command", metavar="SUBCOMMAND")
    pending = sub.add_parser("pending", parents=[maker], help="generated tools waiting for review")
    pending.set_defaults(handler=_pending)
    show = sub.add_parser("show", parents=[maker], help="a generated tool's review and code")
    show.add_argument("tool", metavar="NAME[@VERSION]")
    show.add_argument("--code", action="store_true", help="print the whole module too")
    show.set_defaults(handler=_show)
    approve = sub.add_parser("approve", parents=[maker], help="approve a version after review")
    approve.add_argument("tool", metavar="NAME[@VERSION]")
    approve.add_argument("--activate", action="store_true", help="activate it right away")
    approve.set_defaults(handler=_approve)
    reject = sub.add_parser("reject", parents=[maker], help="reject a version")
    reject.add_argument("tool", metavar="NAME[@VERSION]")
    reject.add_argument("--reason", required=True, help="why (kept in the record and audit)")
    reject.set_defaults(handler=_reject)
    activate = sub.add_parser("activate", parents=[maker], help="activate an approved version")
    activate.add_argument("tool", metavar="NAME[@VERSION]")
    activate.add_argument("--max-output-chars", type=int, help="cap of its result text")
    activate.set_defaults(handler=_activate)
    rollback = sub.add_parser(
        "rollback", parents=[maker], help="make an earlier activated version active again"
    )
    rollback.add_argument("tool", metavar="NAME[@VERSION]")
    rollback.set_defaults(handler=_rollback)
    audit = sub.add_parser("audit", parents=[maker], help="the toolsmaker's audit log")
    audit.add_argument(
        "--verify", action="store_true", help="check the hash chain (exit 1 if broken)"
    )
    audit.add_argument("--tail", type=int, default=20, help="events to print (default 20)")
    audit.set_defaults(handler=_audit)


def _maker(args: argparse.Namespace) -> ToolsmakerRegistry:
    from ai_agent.graph import open_toolsmaker

    return open_toolsmaker(settings_of(args), directory=args.dir, audit_path=args.audit_path)


def _reviewer() -> str:
    import getpass

    try:
        return f"cli ({getpass.getuser()})"
    except (KeyError, OSError):
        return "cli"


def _parse(text: str) -> tuple[str, int | None]:
    name, _, version = text.partition("@")
    # ASCII digits: str.isdigit also takes "\u0661", which int() reads as 1 (another version
    # than the one written), and "\u00b2", which it refuses.
    if not name or (version and not (version.isascii() and version.isdigit())) or len(version) > 9:
        raise UsageError(f"{text!r} is not NAME or NAME@VERSION (e.g. fetch_prices@2)")
    return name, int(version) if version else None


def _pick(maker: ToolsmakerRegistry, text: str, status: str) -> BuildRecord:
    """The named version, or the latest one in ``status`` when no version is given."""
    name, version = _parse(text)
    if version is not None:
        return maker.record(name, version)
    found = [r for r in maker.records(name) if r.status.value == status]
    if not found:
        maker.record(name)  # UnknownToolError when the tool does not exist at all
        raise UsageError(f"{name} has no {status} version; name one as {name}@VERSION")
    return found[-1]


def _pending(args: argparse.Namespace) -> int:
    maker = _maker(args)
    records = maker.pending()
    if args.json:
        print_json([_record_json(maker, r) for r in records])
        return 0
    if not records:
        print("no generated tool is waiting for review")
        return 0
    for r in records:
        review = maker.review(r.name, r.version)
        name, purpose = visible(r.name), visible((r.spec.purpose.splitlines() or [""])[0][:60])
        print(f"{name}@{r.version}  ({visible(r.spec.risk)} risk)  {purpose}")
        print(f"  review: {visible(str(maker.layout.root / str(r.review_path)))}")
        print(
            f"  approve: ai-agent tools approve {name}@{r.version}   "
            f"reject: ai-agent tools reject {name}@{r.version} --reason '...'"
        )
        if review.get("spec_changes"):
            print("  changes: " + visible("; ".join(review["spec_changes"])))
        _print_tests(r, brief=True)
    return 0


def _print_tests(record: BuildRecord, *, brief: bool = False) -> None:
    """The examples' results, failures first (``brief``: the summary and the failures only)."""
    tests = record.tests
    if tests is None:
        return
    head = "  tests: " if brief else "\ntests (failures first): "
    print(head + visible(str(tests.get("summary"))))
    for entry in tests.get("results", []):
        status = str(entry.get("status"))
        if brief and status != "failed":
            continue
        mark = {"passed": "passed", "failed": "FAILED", "not_run": "NOT RUN"}.get(status, status)
        args = json.dumps(entry.get("args"), ensure_ascii=False, sort_keys=True)
        line = f"    test {entry.get('test')} {mark} ({entry.get('seconds')}s) args {args}"
        if entry.get("problem"):
            line += f": {entry['problem']}"
        print(visible(line))
        if not brief:
            shown = entry.get("output") if "output" in entry else entry.get("error")
            print("      " + ("output: " if "output" in entry else "error: ") + visible(str(shown)))


def _record_json(maker: ToolsmakerRegistry, record: BuildRecord) -> dict[str, Any]:
    data = record.to_json()
    data["active"] = maker.active_versions().get(record.name) == record.version
    data["review"] = maker.review(record.name, record.version)
    return data


def _show(args: argparse.Namespace) -> int:
    maker = _maker(args)
    name, version = _parse(args.tool)
    record = maker.record(name, version)
    if args.json:
        data = _record_json(maker, record)
        data["code"] = maker.code(record.name, record.version)
        print_json(data)
        return 0
    review = maker.review(record.name, record.version)
    active = maker.active_versions().get(record.name)
    state = " (active)" if active == record.version else ""
    print(f"{visible(record.name)}@{record.version}: {record.status.value}{state}")
    for step in record.history:
        why = f" - {visible(str(step['reason']))}" if step.get("reason") else ""
        print(f"  {step['at']}  {step['status']:<17} by {visible(str(step.get('by')))}{why}")
    print()
    summary = review.get("summary") or "validation failed: " + "; ".join(
        record.validation["errors"]
    )
    print(visible(summary, "lines"))
    _print_tests(record)
    code_path = visible(str(maker.layout.root / record.code_path))
    print(f"\ncode: {code_path} (sha256 {record.spec.code_sha256})")
    # A person reviews generated code here: exact lines, so no tab or zero-width character hides.
    if review.get("diff"):
        print("\n" + visible(review["diff"], "lines"))
    if args.code:
        print(visible(maker.code(record.name, record.version), "lines"))
    return 0


def _approve(args: argparse.Namespace) -> int:
    maker = _maker(args)
    record = _pick(maker, args.tool, "approval_required")
    maker.approve(record.name, record.version, by=_reviewer())
    print(f"approved {visible(record.name)}@{record.version}")
    if args.activate:
        maker.activate(record.name, record.version, by=_reviewer())
        print(f"activated {visible(record.name)}@{record.version}")
    return 0


def _reject(args: argparse.Namespace) -> int:
    maker = _maker(args)
    record = _pick(maker, args.tool, "approval_required")
    maker.reject(record.name, record.version, reason=args.reason, by=_reviewer())
    print(f"rejected {visible(record.name)}@{record.version}")
    return 0


def _activate(args: argparse.Namespace) -> int:
    maker = _maker(args)
    record = _pick(maker, args.tool, "approved")
    maker.activate(
        record.name, record.version, max_output_chars=args.max_output_chars, by=_reviewer()
    )
    print(f"activated {visible(record.name)}@{record.version}; agents load it when they start")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    maker = _maker(args)
    name, version = _parse(args.tool)
    spec = maker.rollback(name, version, by=_reviewer())
    print(f"{visible(spec.name)} is back at v{maker.active_versions()[name]}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    maker = _maker(args)
    if args.verify:
        report = maker.verify_audit()
        if args.json:
            print_json(
                {
                    "ok": report.ok,
                    "lines": report.lines,
                    "head": report.head,
                    "problems": report.problems,
                }
            )
        elif report.ok:
            print(f"audit log intact: {report.lines} event(s), head {report.head}")
        else:
            print(f"audit log BROKEN ({visible(str(maker.layout.audit))}):")
            for problem in report.problems:
                print(f"  - {visible(problem)}")
        return 0 if report.ok else 1
    events = maker.audit_log.events()[-max(args.tail, 0) :] if args.tail else []
    if args.json:
        print_json(events)
        return 0
    for event in events:
        who = f"{event.get('tool')}@{event.get('version')}" if event.get("tool") else ""
        data = event.get("data") or {}
        extra = str(data.get("reason") or data.get("by") or "")
        line = f"{event['seq']:>5} {event['ts']} {event['event']:<24} {who} {extra}".rstrip()
        print(visible(line))
    return 0
