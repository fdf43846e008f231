"""`sessiondag sessions`: inspect and manage sessions from a terminal.

    sessiondag sessions list [--workdir DIR | --all] [--json]     newest first; default: this dir's
    sessiondag sessions show ID [--json]
    sessiondag sessions branches ID [--json]
    sessiondag sessions log ID [--head NODE] [--json]             the chat stream of a branch
    sessiondag sessions render ID [--head NODE] [--frame NODE] [--format openai|anthropic]
    sessiondag sessions checkout ID NODE                          make NODE the session's HEAD
    sessiondag sessions restore ID NODE [--files|--conversation|--both] [--dry-run] [--force] [--undo]
    sessiondag sessions diff ID [A] B                             files and nodes between two nodes
    sessiondag sessions name ID TITLE | --branch NODE NAME        rename the session / name a branch
    sessiondag sessions export ID [--format markdown|jsonl|html] [--head NODE] [-o FILE] [--redact PATTERN]…
    sessiondag sessions delete ID [--yes]                         (reset: the same)
    sessiondag sessions watch ID                                  print the session live (cli/watch.py)
    sessiondag sessions usage ID [--by branch|node|subagent|model|turn] [--head NODE] [--json]
    sessiondag sessions compare ID A B [--format json|markdown]    two branches or calls side by side
    every subcommand: --state-dir DIR

IDs (sessions and nodes) may be unique prefixes; a node may also be `#SEQ`. Reads work on any
session regardless of the current directory. Exit codes: 0 ok, 1 no such session / unreadable /
refused, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, cast

import orjson

if TYPE_CHECKING:
    from typing import NotRequired, TypedDict

    from ..context.views import ChatCall, ChatRowBase
    from ..store.handles import SessionStore
    from ..store.session import Session

    class LogCall(ChatCall):
        seq: int
        input: object  # the node's own values
        output: object

    class RowError(TypedDict):
        type: object  # read from the node's metadata.error as it is
        message: object

    class LogRow(ChatRowBase):
        """A chat row as `sessions log` prints it: its calls' values, its error, its turn number."""
        calls: NotRequired[list[LogCall]]
        error: NotRequired[RowError]
        turn: NotRequired[int]

from .checkpoints import add_arguments, run as run_checkpoints, snapshot_bytes
from .common import NoSession, Parser, UsageError, resolve_node, resolve_session
from .report import add_report_arguments, report_limits

PROG = "sessiondag sessions"
SHORT = 12


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Inspect and manage sessions.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    cmds = {"list": "list sessions (newest first)", "show": "a session's handle and summary",
            "branches": "branch tips", "log": "the chat stream of a branch",
            "render": "the wire messages of a branch", "checkout": "make a node the session's HEAD",
            "name": "rename the session (or name a branch with --branch)", "export": "the session as markdown, JSONL or a self-contained HTML report",
            "delete": "delete a session", "reset": "delete a session (same as delete)",
            "watch": "print a session live as it changes",
            "usage": "tokens and cost, rolled up by branch, node, sub-agent, model or turn",
            "compare": "two branches (or two calls) side by side",
            "restore": "put the files and/or conversation back to a node (cli/checkpoints.py)",
            "diff": "the files and nodes that differ between two nodes"}
    for name, text in cmds.items():
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
        if name == "list":
            sp.add_argument("--workdir", help="only sessions of this working dir (default: the current one)")
            sp.add_argument("--all", action="store_true", help="sessions of every working dir")
            sp.add_argument("--json", action="store_true")
            continue
        sp.add_argument("session_id", help="the session (id or unique prefix)")
        if name in ("show", "branches", "log", "usage"):
            sp.add_argument("--json", action="store_true", help="one machine-readable answer on stdout")
        if name == "log":
            sp.add_argument("--no-tools", action="store_true", help="hide the tool calls under each reply")
        if name in ("log", "render", "export", "usage"):
            sp.add_argument("--head", help="branch tip (default: HEAD)")
        if name == "render":
            sp.add_argument("--frame", help="render from inside this function node")
            sp.add_argument("--format", choices=("openai", "anthropic"), default="openai")
        if name == "export":
            sp.add_argument("--format", choices=("markdown", "jsonl", "html"), default="markdown")
            sp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
            add_report_arguments(sp)
        if name == "compare":
            sp.add_argument("a", help="a branch tip or model call")
            sp.add_argument("b")
            sp.add_argument("--format", choices=("json", "markdown"), default="markdown")
        if name == "usage":
            sp.add_argument("--by", choices=("branch", "node", "subagent", "model", "turn"), default="branch")
        if name == "checkout":
            sp.add_argument("node", metavar="N|NODE", help="continue from the end of turn N of the current "
                            "branch (the [N] of `sessions log`) or from a node (id, unique prefix or #SEQ)")
        if name == "name":
            sp.add_argument("title", help="the new title (with --branch: the branch name; '' clears it)")
            sp.add_argument("--branch", metavar="NODE", help="name the branch whose tip is NODE instead")
        if name in ("delete", "reset"):
            sp.add_argument("-y", "--yes", action="store_true", help="do not ask")
        if name in ("restore", "diff"):
            add_arguments(name, sp)
        if name == "watch":
            sp.add_argument("--turns", type=int, metavar="N", help="exit after N committed turns")
    return p


def _dump(obj: object) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def _one_line(text: object, n: int = 100) -> str:
    s = text if isinstance(text, str) else orjson.dumps(text).decode()
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    if args.cmd == "watch":
        from .watch import watch
        return watch(args.session_id, args.state_dir, args.turns)
    from ..core.errors import InvalidSessionIdError, SessionDagError
    from ..context.store_factory import open_store
    store = open_store(args.state_dir)  # checkout/name/title commits age too
    try:
        return _run(store, args)
    except (UsageError, InvalidSessionIdError) as e:
        print(f"{PROG} {args.cmd}: {e}", file=sys.stderr)
        return 2
    except NoSession as e:
        print(f"{PROG} {args.cmd}: {e}", file=sys.stderr)
        return 1
    except SessionDagError as e:
        print(f"{PROG} {args.cmd}: {e}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _run(store: SessionStore, args: argparse.Namespace) -> int:
    if args.cmd == "list":
        return _list(store, args)
    sid = resolve_session(store, args.session_id)
    if args.cmd in ("delete", "reset"):
        from .delete import delete
        return delete(store, sid, yes=args.yes, prog=f"{PROG} {args.cmd}")
    s = store.session(sid)
    if args.cmd == "show":
        from .catalog import summary
        handle = store.handle(s)
        h: dict[str, object] = dict(handle.to_dict())
        g = s.graph
        row = summary(store, sid)
        h.update({"title": row["title"], "nodes": len(g.nodes) - 1, "branches": len(g.list_branches()),
                  "turns": row["turns"], "commits": s.turn, "created_at": s.info.get("created_at"),
                  "last_activity": row["last_activity"], **snapshot_bytes(s)})
        if args.json:
            _dump(h)
        else:
            for k in ("session_id", "title", "working_dir", "head_id", "nodes", "branches", "turns", "commits",
                      "repo_bytes", "snapshot_bytes", "workspace_bytes"):
                print(f"{k:<12} {h[k]}")
            print(f"{'usage':<12} {handle.usage_total.input_tokens} in / {handle.usage_total.output_tokens} out")
        return 0
    if args.cmd == "branches":
        return _branches(s, args.json)
    head = resolve_node(s, args.head) if getattr(args, "head", None) else None
    if args.cmd == "log":
        return _log(s, head, args.json, tools=not args.no_tools)
    if args.cmd == "usage":
        from .usage import usage
        return usage(s, args.by, head, args.json)
    if args.cmd == "compare":
        from .compare import compare_cmd
        return compare_cmd(s, resolve_node(s, args.a), resolve_node(s, args.b), args.format)
    if args.cmd == "render":
        from ..context.renderer import renderer_for
        frame = resolve_node(s, args.frame) if args.frame else None
        msgs, manifest = renderer_for(s).messages(s, head, frame=frame, format=args.format)
        _dump({"messages": msgs, "manifest": manifest})
        return 0
    if args.cmd == "checkout":
        from .turns import resolve_point
        node = resolve_point(s, args.node)
        with s.lock:
            s.checkout(node)
            s.commit_turn(f"checkout {node}")
        print(f"HEAD of {sid} is now {node}")
        return 0
    if args.cmd in ("restore", "diff"):
        return run_checkpoints(store, s, args)
    if args.cmd == "name":
        return _name(s, args)
    if args.cmd == "export":
        from .export import export, write_out
        return write_out(export(s, head, args.format, report_limits(args)), args.output, f"{PROG} export")
    return 2


def _branches(s: Session, json_mode: bool) -> int:
    """Each branch with what tells it apart (core/branch_labels.py, as session/list_branches
    gives it): its label and where it leaves the main line (`from turn N`), then its tip."""
    from ..core.branch_labels import label_all, where
    rows = [b.to_dict() for b in s.list_branches()]
    label_all(rows, s.get_branch)
    if json_mode:
        _dump(rows)
        return 0
    for b in rows:
        mark = "*" if b["current"] else " "
        kind = "main" if b["main"] else ("spawn" if b["spawn_root"] else "fork")
        tip = s.get_node(b["head_id"])
        label = b["label"]
        print(f"{mark} {b['head_id'][:SHORT]}  {kind:<5} {b['status']:<9} {_one_line(label, 50):<50} "
              f"{where(b.get('from_turn')):<14} "
              f"{tip.role}: {_one_line(tip.output, 40)}")
    return 0


def _list(store: SessionStore, args: argparse.Namespace) -> int:
    import os
    from .catalog import summaries, table
    wd = None if args.all else os.path.abspath(args.workdir or os.getcwd())
    rows = summaries(store, wd)
    if args.json:
        _dump(rows)
        return 0
    if not rows:
        where = "" if args.all else f" for {wd} (--all lists every working dir)"
        print(f"no sessions{where}")
        return 0
    for line in table(rows, show_dir=args.all):
        print(line)
    return 0


def _log(s: Session, head: str | None, json_mode: bool, *, tools: bool = True) -> int:
    """The branch as rows: seq, short id, the turn number of each user message (the numbering
    --edit N and the chat's /fork N take), the reply, and under it each tool call with its status
    and result (a refusal's reason included)."""
    from ..context.views import chat_stream
    rows = cast("list[LogRow]", chat_stream(s, head))  # the same dicts, filled in below
    turn = 0
    for r in rows:
        err = s.get_node(r["id"]).metadata.get("error") if r["status"] == "error" else None
        if isinstance(err, dict):
            r["error"] = {"type": err.get("type"), "message": err.get("message")}
        if r["role"] == "user":
            turn += 1
            r["turn"] = turn
        for c in r.get("calls") or ():
            node = s.get_node(c["id"])
            c["seq"], c["input"], c["output"] = node.seq, node.input, node.output
    if json_mode:
        _dump(rows)
        return 0
    for r in rows:
        calls = f"  [{', '.join(c['name'] for c in r.get('calls', []))}]" if r.get("calls") and not tools else ""
        status = "" if r["status"] == "completed" else f" ({r['status']})"
        who = f"[{r['turn']}] " if "turn" in r else ""
        print(f"{r['seq']:>5} {r['id'][:SHORT]} {r['role']:<4} {who}{r['name']}{status}: {_one_line(r['text'])}{calls}")
        if r.get("error"):
            print(f"{'':>5} {'':<{SHORT}} └ {r['error']['type']}: {_one_line(r['error']['message'], 200)}")
        for c in (r.get("calls") or ()) if tools else ():
            cstatus = "" if c["status"] == "completed" else f" ({c['status']})"
            print(f"{c['seq']:>5} {c['id'][:SHORT]} tool   {c['name']}({_one_line(c['input'], 60)}){cstatus}: "
                  f"{_one_line(c['output'], 100)}")
    return 0


def _name(s: Session, args: argparse.Namespace) -> int:
    from .catalog import TITLE_KEY
    if args.branch:
        node = resolve_node(s, args.branch)
        with s.lock:
            s.name_branch(node, args.title or None)
            s.commit_turn(f"name branch {node}")
        print(f"branch {node[:SHORT]} named {args.title!r}" if args.title else f"branch {node[:SHORT]} unnamed")
        return 0
    title = " ".join(args.title.split())
    if not title:
        raise UsageError("the title is empty")
    with s.lock:
        s.set_meta(TITLE_KEY, title)
        s.commit_turn(f"title: {title[:60]}")
        s.update_info(title=title)  # what session/list shows (editors' trees and pickers)
    print(f"{s.id}: {title}")
    return 0
