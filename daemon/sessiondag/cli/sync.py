"""`sessiondag sync`: sessions across machines through any git remote (docs/sync.md).

    sessiondag sync remote add NAME URL [--default] | remote list | remote remove NAME
    sessiondag sync push [REMOTE] (--session ID | --all | --working-dir DIR) [--dry-run] [--allow-secrets]
    sessiondag sync pull [REMOTE] (--session ID | --all | --working-dir DIR) [--here DIR]
    sessiondag sync clone REMOTE ID [--here DIR]
    sessiondag sync list [REMOTE]
    sessiondag sync auto-push (--session ID | --working-dir DIR) (REMOTE | off | default)

REMOTE is a name from `remote add` or any git URL; omitted, the default remote. Every command takes
--state-dir and --json. A refusal (secret, size, conflict, non-fast-forward, unreachable,
credentials) prints its typed code and changes nothing; exit status 1. With several sessions
(--all, --working-dir) each refusal is that session's row and the others go on.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .common import Parser

if TYPE_CHECKING:
    import argparse

    from ..store.handles import SessionStore
    from ..sync.summary import RemoteSession

PROG = "sessiondag sync"


def _parser() -> Parser:
    p = Parser(prog=PROG, description="Push, pull, clone and list sessions through a git remote.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("remote", help="named remotes: add | list | remove")
    rsub = r.add_subparsers(dest="action", required=True)
    add = rsub.add_parser("add")
    add.add_argument("name")
    add.add_argument("url")
    add.add_argument("--default", action="store_true", help="make it the default remote")
    rsub.add_parser("list")
    rm = rsub.add_parser("remove")
    rm.add_argument("name")
    for name in ("push", "pull"):
        sp = sub.add_parser(name)
        sp.add_argument("remote", nargs="?")
        which = sp.add_mutually_exclusive_group()
        which.add_argument("--session", help="one session (id)")
        which.add_argument("--all", action="store_true", help="every session (of this state dir / the remote)")
        which.add_argument("--working-dir", help="the sessions of this working dir (its project, for a pull)")
        if name == "push":
            sp.add_argument("--dry-run", action="store_true", help="list what would be sent and its size; send nothing")
            sp.add_argument("--allow-secrets", action="store_true", help="push even what looks like a credential")
        else:
            sp.add_argument("--here", help="the checkout a cloned session binds to when it is its project (default: cwd)")
    c = sub.add_parser("clone")
    c.add_argument("remote")
    c.add_argument("session_id")
    c.add_argument("--here", help="the checkout to bind to when it is the session's project (default: cwd)")
    ls = sub.add_parser("list")
    ls.add_argument("remote", nargs="?")
    ap = sub.add_parser("auto-push", help="push one session or a working dir's sessions after each turn commit")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--session", help="one session (id)")
    where.add_argument("--working-dir", help="every session of this working dir")
    ap.add_argument("remote", help="a remote, off (never, whatever the setting says), or default (no rule)")
    for sp in list(sub.choices.values()) + [add, rm]:
        sp.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
        sp.add_argument("--json", action="store_true", help="print JSON")
    return p


def _print(args: argparse.Namespace, obj: object, lines: list[str]) -> None:
    if args.json:
        import orjson
        sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for line in lines:
            print(line)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from ..core.errors import SessionDagError
    from ..context.store_factory import open_store
    store = open_store(getattr(args, "state_dir", None))
    try:
        return _run(store, args)
    except SessionDagError as e:
        if getattr(args, "json", False):
            _print(args, {"error": {"code": e.code, "message": str(e), "data": e.data()}}, [])
        print(f"{PROG}: {e.code}: {e}", file=sys.stderr)
        return 1
    finally:
        store.close()


def _run(store: SessionStore, args: argparse.Namespace) -> int:
    from ..sync import remotes
    state = store.state_dir
    if args.cmd == "remote":
        if args.action == "add":
            added = remotes.add(state, args.name, args.url, default=args.default)
            _print(args, {"name": added.name, "url": added.url}, [f"remote {added.name} = {added.url}"])
        elif args.action == "list":
            configured = remotes.listed(state)
            _print(args, configured, [f"{'*' if r['default'] else ' '} {r['name']}  {r['url']}" for r in configured])
        else:
            if not remotes.remove(state, args.name):
                print(f"{PROG}: no remote {args.name}", file=sys.stderr)
                return 1
        return 0
    if args.cmd == "auto-push":
        value = None if args.remote == "default" else args.remote
        remotes.set_auto_push(state, value, session_id=args.session, working_dir=args.working_dir)
        what = f"session {args.session}" if args.session else f"working dir {os.path.realpath(args.working_dir)}"
        _print(args, {"session": args.session, "working_dir": args.working_dir, "auto_push": value},
               [f"{what}: auto-push " + ("as the setting says" if value is None else value)])
        return 0
    remote = remotes.bounded(remotes.resolve(state, args.remote), store.settings())
    if args.cmd == "list":
        from ..sync.listing import list_remote
        from .catalog import ago
        rows = list_remote(remote)
        _print(args, rows, [f"{r['session_id']}  {r['title'] or '-'}  {ago(r['last_activity'])}  "
                            f"{_where(r)}" for r in rows])
        return 0
    if args.cmd == "clone":
        from ..sync.pull import clone
        res = clone(store, remote, args.session_id, working_dir=args.here)
        _print(args, res, [f"cloned {res['session_id']} ({res['nodes']} nodes) bound to {res['working_dir']}"])
        return 0
    from ..sync import selection
    if args.cmd == "push":
        from ..sync.push import push
        settings = store.settings()
        ids = selection.local_ids(store, session=args.session, all_=args.all, working_dir=args.working_dir)
        results = _each(ids, lambda sid: push(store, remote, sid, settings, allow_secrets=args.allow_secrets,
                                              dry_run=args.dry_run, commit_first=True))
        lines = []
        for r in results:
            if "error" in r:
                lines.append(f"{r['session_id']}: refused: {r['error']['code']}: {r['error']['message']}")
                continue
            lines.append(f"{r['session_id']}: {r['status']} ({r['objects']} objects, {r['bytes']} bytes)")
            for o in r.get("sent", []):
                lines.append(f"  {o['kind']:<6} {o['size']:>10}  {o['name'] or o['sha']}")
        _print(args, results, lines)
        return 1 if any("error" in r for r in results) else 0
    from ..sync.listing import list_remote
    from ..sync.pull import pull
    from ..sync.transport import remote_refs
    refs = remote_refs(remote.url)
    rows = list_remote(remote, refs) if not args.session else []
    ids = selection.remote_ids(rows, session=args.session, all_=args.all, working_dir=args.working_dir)
    here = args.here or (args.working_dir and os.path.realpath(args.working_dir))
    results = _each(ids, lambda sid: pull(store, remote, sid, working_dir=here, refs=refs))
    _print(args, results, [f"{r['session_id']}: refused: {r['error']['code']}: {r['error']['message']}" if "error" in r
                           else f"{r['session_id']}: {r['status']}" + (f" (+{r['added']} nodes)" if r.get("added") else "")
                           for r in results])
    return 1 if any("error" in r for r in results) else 0


def _each(ids: list[str], fn: Callable[[str], Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """fn over several sessions: a refusal of one is its row (typed), the others still run; with one
    session the refusal is raised as it is."""
    from ..core.errors import SessionDagError
    if len(ids) == 1:
        return [fn(ids[0])]
    out: list[Mapping[str, Any]] = []
    for sid in ids:
        try:
            out.append(fn(sid))
        except SessionDagError as e:
            out.append({"session_id": sid, "error": {"code": e.code, "message": str(e), "data": e.data()}})
    return out


def _where(r: RemoteSession) -> str:
    ident = r.get("identity") or {}
    if ident.get("kind") == "git":
        return f"{ident.get('remote')}:{ident.get('path')}"
    return r.get("working_dir") or "-"
