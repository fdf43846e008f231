"""`sessiondag gc [--older-than DAYS] [--keep N] [--dry-run] [--force]`: prune the state dir.

Removes the sessions older than DAYS (last write) and/or beyond the N most recent, except those
with work no remote has (unpushed commits, uncommitted records) unless --force, and those another
process has open; packs every session it keeps; prints each session's fate and why
(sync/retention.py). Its own module so that other parts of the state dir can add their pruning here.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .common import Parser

if TYPE_CHECKING:
    import argparse

    from ..sync.retention import Verdict

PROG = "sessiondag gc"


def parser() -> Parser:
    p = Parser(prog=PROG, description="Prune old sessions of a state dir and pack the rest.")
    p.add_argument("--older-than", type=float, metavar="DAYS", help="remove sessions last written before this")
    p.add_argument("--keep", type=int, metavar="N", help="keep the N most recent sessions, remove the others")
    p.add_argument("--dry-run", action="store_true", help="say what would be removed; remove and pack nothing")
    p.add_argument("--force", action="store_true", help="remove even sessions with unpushed work")
    p.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.keep is not None and args.keep < 0 or args.older_than is not None and args.older_than < 0:
        print(f"{PROG}: --keep and --older-than take non-negative numbers", file=sys.stderr)
        return 2
    from ..context.store_factory import open_store
    from ..sync.retention import collect
    store = open_store(args.state_dir)
    try:
        verdicts = collect(store, older_than_days=args.older_than, keep=args.keep, dry_run=args.dry_run,
                           force=args.force)
    finally:
        store.close()
    _print(args, verdicts)
    return 0


def _print(args: argparse.Namespace, verdicts: list[Verdict]) -> None:
    if args.json:
        import orjson
        sys.stdout.write(orjson.dumps([v.to_dict() for v in verdicts], option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    for v in verdicts:
        packed = f"; packed {v.packed[0]} -> {v.packed[1]} bytes" if v.packed else ""
        print(f"{v.action:<12} {v.session_id}: {v.reason}{packed}")
