"""`sessiondag resume [TASK]`: pick a session of this working dir (or --all) and continue it.

In a terminal, a numbered picker shows title, last activity, turns, last status and branch (Enter
takes the newest); then TASK — or, without one, the next line typed at the `>` prompt — runs as a
turn of the picked session, exactly as `sessiondag run TASK --session ID` would (the remaining
options go to `run`). Not in a terminal there is nobody to pick: the list is printed with the
command to run, and the exit status is 2.
"""

from __future__ import annotations

import os
import sys

from .common import Parser

PROG = "sessiondag resume"


def parser() -> Parser:
    p = Parser(prog=PROG, description="Pick a session and continue it.",
               epilog="Other options (--json, --provider, --allow …) are passed to `sessiondag run`.")
    p.add_argument("task", nargs="?", help="the next user message (asked for when missing)")
    p.add_argument("--all", action="store_true", help="sessions of every working dir")
    p.add_argument("--workdir", help="working dir (default: the current directory)")
    p.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
    return p


def _ask(prompt: str) -> str | None:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return None if not line else line.strip()


def main(argv: list[str]) -> int:
    try:
        args, rest = parser().parse_known_args(argv)
        from .run import parser as run_parser
        run_parser().parse_args(["task", "--session", "s", *rest])  # the options for `run`, checked now
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    from ..store import SessionStore
    from .catalog import summaries, table
    store = SessionStore(args.state_dir)
    wd = os.path.abspath(args.workdir or os.getcwd())
    try:
        rows = [r for r in summaries(store, None if args.all else wd) if r["readable"]]
    finally:
        store.close()
    if not rows:
        print(f"{PROG}: no sessions" + ("" if args.all else f" for {wd} (--all shows every working dir)"),
              file=sys.stderr)
        return 1
    lines = table(rows, show_dir=args.all)
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    if not interactive:
        print("\n".join(lines))
        print(f"{PROG}: not a terminal, so nothing can be picked; continue one with: "
              f"sessiondag run TASK --session ID", file=sys.stderr)
        return 2
    sys.stderr.write("    " + lines[0] + "\n")
    for i, line in enumerate(lines[1:], 1):
        sys.stderr.write(f"{i:>3} {line}\n")
    while True:
        pick = _ask(f"session [1-{len(rows)}, Enter: 1, q: quit]: ")
        if pick is None or pick.lower() in ("q", "quit"):
            return 1
        if pick == "":
            row = rows[0]
            break
        if pick.isdigit() and 1 <= int(pick) <= len(rows):
            row = rows[int(pick) - 1]
            break
        sys.stderr.write(f"pick a number from 1 to {len(rows)}\n")
    sid = row["session_id"]
    sys.stderr.write(f"resuming {sid}: {row['title']}\n")
    task = args.task
    while not task:
        task = _ask("> ")
        if task is None:
            return 1
    run_args = [task, "--session", sid, *rest]
    if args.state_dir:
        run_args += ["--state-dir", args.state_dir]
    if row["working_dir"] and row["working_dir"] != os.path.realpath(wd):
        run_args += ["--workdir", row["working_dir"]]
    elif args.workdir:
        run_args += ["--workdir", wd]
    from .run import main as run_main
    return run_main(run_args)
