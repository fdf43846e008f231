"""`sessiondag sessions restore|diff`: workspace checkpoints from a terminal (docs/checkpoints.md).

    sessiondag sessions restore ID NODE [--files|--conversation|--both] [--before] [--dry-run] [--force] [PATH…]
    sessiondag sessions restore ID --undo [--dry-run] [--force]
    sessiondag sessions diff ID [A] B [PATH…]        A defaults to the turn before B; B may be `current`

A restore of a session the daemon of this state dir holds open goes through that daemon
(`session/restore`), which announces it to the session's subscribers (`session/did_change {kind:
restore}`: editors reload); otherwise it runs in this process (the turn lock keeps it off a running
turn, in a daemon too). A diff always runs here. Exit codes: 0 done, 1 refused (dirty tree, a turn
running, no snapshot), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, cast

import orjson

from .common import resolve_node

if TYPE_CHECKING:
    from sessiondag_client.discovery import DaemonRecord
    from sessiondag_client.wire import protocol as wp

    from ..store.handles import SessionStore
    from ..store.session import Session


def add_arguments(name: str, sp: argparse.ArgumentParser) -> None:
    if name == "restore":
        sp.add_argument("node", nargs="?", help="the node whose files (and/or conversation) to go back to")
        g = sp.add_mutually_exclusive_group()
        for what in ("files", "conversation", "both"):
            g.add_argument(f"--{what}", dest="what", action="store_const", const=what)
        sp.add_argument("--dry-run", action="store_true", help="list what would change, change nothing")
        sp.add_argument("--force", action="store_true", help="restore even if files changed since the last snapshot")
        sp.add_argument("--undo", action="store_true", help="put the files back as they were before the last restore")
        sp.add_argument("--before", action="store_true",
                        help="the files as they were just before NODE (a tool call) ran, not at the end of its turn")
        sp.add_argument("--json", action="store_true")
        sp.add_argument("--path", action="append", dest="paths", help="only this path (repeatable)")
    else:
        sp.add_argument("nodes", nargs="+", help="[A] B: nodes (B may be `current`)")
        sp.add_argument("--path", action="append", dest="paths", help="only this path (repeatable)")
        sp.add_argument("--json", action="store_true")


def run(store: SessionStore, s: Session, args: argparse.Namespace) -> int:
    from ..runtime import checkpoints as ck
    from ..workspace.checkpointer import install
    install(store)
    if args.cmd == "restore":
        if args.undo == bool(args.node):
            print("sessiondag sessions restore: give NODE or --undo", file=sys.stderr)
            return 2
        node = resolve_node(s, args.node) if args.node else None
        daemon = _daemon_holding(store, s)
        if daemon is not None:
            through = _restore_through(daemon, s.id, node, args)
            if through is None:
                return 1
            out = through
        else:  # the answer session/restore gives (rpc/ returns it as is; tests/rpc/test_schema* check it)
            out = cast("wp.SessionRestoreResult", ck.restore(s, node, args.what or "files", args.paths, args.dry_run,
                                                             args.force, args.undo, args.before))
        if args.json:
            sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
            return 0
        files = out.get("files")
        if files:
            for c in files["changes"]:
                why = f"  ({c['why']})" if c.get("why") else ""
                print(f"{c['change']:<8} {c['path']}{why}")
            verb = "would change" if out["dry_run"] else "changed"
            n = sum(c["change"] != "skipped" for c in files["changes"])
            print(f"{n} file(s) {verb}" + (f"; undo with: sessiondag sessions restore {s.id} --undo"
                                            if not out["dry_run"] and files["undo"] else ""))
        if args.what in ("conversation", "both") and not out["dry_run"]:
            print(f"HEAD of {s.id} is now {out['head_id']}")
        return 0
    nodes = args.nodes
    if len(nodes) > 2:
        print("sessiondag sessions diff: at most two nodes", file=sys.stderr)
        return 2
    b = nodes[-1] if nodes[-1] == "current" else resolve_node(s, nodes[-1])
    a = resolve_node(s, nodes[0]) if len(nodes) == 2 else None
    diff = ck.diff(s, a, b, args.paths)
    if args.json:
        sys.stdout.write(orjson.dumps(diff, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    for f in diff["files"]:
        if "diff" in f:
            sys.stdout.write(f["diff"] if f["diff"].endswith("\n") or not f["diff"] else f["diff"] + "\n")
        else:
            what = ("binary" if f.get("binary") else "too big to show" if f.get("too_big")
                    else "over the size limit, not stored" if f.get("not_stored") else f"mode {f['old_mode']} -> {f['new_mode']}")
            print(f"{f['change']} {f['path']} ({what})")
    n = diff["nodes"]
    print(f"# conversation: {len(n['only_in_from'])} node(s) only in {diff['from']}, "
          f"{len(n['only_in_to'])} only in {diff['to']}")
    return 0


def _daemon_holding(store: SessionStore, s: Session) -> DaemonRecord | None:
    """The daemon of this state dir when it holds the session open (it has subscribers to tell)."""
    import os
    from sessiondag_client.discovery import find_daemon
    from ..store.presence import NAME, holders
    info = find_daemon(store.state_dir)
    if info is None or info.get("pid") not in holders(os.path.join(s.path, NAME)):
        return None
    return info


def _restore_through(info: DaemonRecord, sid: str, node: str | None,
                     args: argparse.Namespace) -> wp.SessionRestoreResult | None:
    """session/restore on the daemon; a refusal is printed (None)."""
    from sessiondag_client import SyncClient
    from sessiondag_client.wire.errors import RpcError
    params = {"session_id": sid, "node_id": node, "what": args.what or "files", "paths": args.paths,
              "dry_run": args.dry_run or None, "force": args.force or None, "undo": args.undo or None,
              "before": args.before or None}
    try:
        with SyncClient.connect(info["socket"], client_name="sessiondag sessions restore") as c:
            restored: wp.SessionRestoreResult = c.call("session/restore", params)  # as ck.restore's answer
            return restored
    except RpcError as e:
        paths = (getattr(e, "rpc_data", None) or {}).get("paths") or []
        print(f"sessiondag sessions restore: {e}" + "".join(f"\n  {p}" for p in paths), file=sys.stderr)
        return None


def snapshot_bytes(s: Session) -> dict[str, int]:
    """For `sessions show`: the session repository's size on disk, the content bytes its workspace
    snapshots added (what each stored new, summed: unchanged files count once, a file a tool call
    already recorded counts there), and the size of the files the latest snapshot tracks."""
    from ..core.checkpoint import BASELINE_KEY, NODE_KEY, RESTORED_KEY, UNDO_KEY
    from ..store import checkpoints
    from ..store.repo_size import repo_bytes
    g = s.graph
    total = sum((c.metadata.get(NODE_KEY) or {}).get("new_bytes", 0) for c in g.nodes.values()
                if c.role == "user" and isinstance(c.metadata, dict))
    for key in (BASELINE_KEY, RESTORED_KEY):
        total += (g.extra.get(key) or {}).get("new_bytes", 0)
    total += sum(u.get("new_bytes", 0) for u in g.extra.get(UNDO_KEY) or [])
    head = s.git.head()
    last = s.git.workspace(head) if head is not None else None
    files = checkpoints.read(s.git, last)[1].get("bytes", 0) if last else 0
    return {"repo_bytes": repo_bytes(s.git.git_dir), "snapshot_bytes": total, "workspace_bytes": files}
