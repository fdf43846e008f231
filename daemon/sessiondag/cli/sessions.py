"""`sessiondag sessions`: inspect sessions from a terminal.

    sessiondag sessions list [--workdir DIR] [--json]
    sessiondag sessions show ID [--json]
    sessiondag sessions branches ID [--json]
    sessiondag sessions log ID [--head NODE] [--json]        the chat stream of a branch
    sessiondag sessions render ID [--head NODE] [--frame NODE] [--format openai|anthropic]
    sessiondag sessions reset ID

Reads work on any session regardless of the current directory. Exit codes: 0 ok, 1 not found or
unreadable, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import orjson


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        print(f"sessiondag sessions: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sessiondag sessions", description="Inspect sessions.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="list sessions")
    ls.add_argument("--workdir", help="only sessions of this working dir")
    ls.add_argument("--json", action="store_true")
    for name, text in (("show", "a session's handle and summary"), ("branches", "branch tips"),
                       ("log", "the chat stream of a branch"), ("render", "the wire messages of a branch"),
                       ("reset", "drop a session")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("session_id")
        if name in ("show", "branches", "log"):
            sp.add_argument("--json", action="store_true")
        if name in ("log", "render"):
            sp.add_argument("--head", help="branch tip (default: HEAD)")
        if name == "render":
            sp.add_argument("--frame", help="render from inside this function node")
            sp.add_argument("--format", choices=("openai", "anthropic"), default="openai")
    return p


def _dump(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def _one_line(text: Any, n: int = 100) -> str:
    s = text if isinstance(text, str) else orjson.dumps(text).decode()
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    from ..core.errors import SessionDagError
    from ..store import SessionStore
    store = SessionStore()
    try:
        return _run(store, args)
    except SessionDagError as e:
        print(f"sessiondag sessions: {e}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _run(store, args) -> int:
    if args.cmd == "list":
        rows = store.list_sessions(working_dir=args.workdir)
        if args.json:
            _dump(rows)
            return 0
        for r in rows:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])) if r.get("created_at") else "?"
            flag = "" if r.get("readable", True) else "  [unreadable]"
            print(f"{r['session_id']:<40} {when}  {r.get('working_dir') or '-'}{flag}")
        return 0
    if args.cmd == "reset":
        if not store.reset_session(args.session_id):
            print(f"sessiondag sessions: no session {args.session_id!r}", file=sys.stderr)
            return 1
        print(f"reset {args.session_id}")
        return 0
    s = store.session(args.session_id)
    if args.cmd == "show":
        h = store.handle(s).to_dict()
        g = s.graph
        h.update({"nodes": len(g.nodes) - 1, "branches": len(g.list_branches()), "turns": s.turn,
                  "created_at": s.info.get("created_at")})
        if args.json:
            _dump(h)
        else:
            for k in ("session_id", "working_dir", "head_id", "nodes", "branches", "turns"):
                print(f"{k:<12} {h[k]}")
            print(f"{'usage':<12} {h['usage_total']['input_tokens']} in / {h['usage_total']['output_tokens']} out")
        return 0
    if args.cmd == "branches":
        rows = [b.to_dict() for b in s.list_branches()]
        if args.json:
            _dump(rows)
            return 0
        for b in rows:
            mark = "*" if b["current"] else " "
            kind = "main" if b["main"] else ("spawn" if b["spawn_root"] else "fork")
            tip = s.get_node(b["head_id"])
            print(f"{mark} {b['head_id']}  {kind:<5} {b['status']:<9} {b['name'] or '':<16} "
                  f"{tip.role}: {_one_line(tip.output, 60)}")
        return 0
    if args.cmd == "log":
        from ..context.views import chat_stream
        rows = chat_stream(s, args.head)
        if args.json:
            _dump(rows)
            return 0
        for r in rows:
            calls = f"  [{', '.join(c['name'] for c in r.get('calls', []))}]" if r.get("calls") else ""
            status = "" if r["status"] == "completed" else f" ({r['status']})"
            print(f"{r['seq']:>5} {r['role']:<4} {r['name']}{status}: {_one_line(r['text'])}{calls}")
        return 0
    if args.cmd == "render":
        from ..context.messages import render_messages
        msgs, manifest = render_messages(s, args.head, frame=args.frame, format=args.format)
        _dump({"messages": msgs, "manifest": manifest})
        return 0
    return 2
