"""`sessiondag resume [TASK]`: pick a session of this working dir (or --all), then chat with it.

In a terminal, a numbered picker shows title, last activity, turns, last status and branch (Enter
takes the newest; q, Ctrl-C or Ctrl-D leave); then `sessiondag chat` continues the picked session
(cli/chat.py), TASK, when given, being its first message. The remaining options are chat's
(--provider, --model, --allow …). Not in a terminal there is nobody to pick: the list is printed
with the command to run, and the exit status is 2.
"""

from __future__ import annotations

import os
import sys

from .common import Parser

PROG = "sessiondag resume"


def parser() -> Parser:
    p = Parser(prog=PROG, description="Pick a session and chat with it.",
               epilog="Other options (--provider, --model, --allow …) are passed to `sessiondag chat`.")
    p.add_argument("task", nargs="?", help="the first message of the chat (optional)")
    p.add_argument("--all", action="store_true", help="sessions of every working dir")
    p.add_argument("--workdir", help="working dir (default: the current directory)")
    p.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
    return p


def _ask(prompt: str) -> str | None:
    """A line typed at the terminal; None for Ctrl-D or Ctrl-C (the shell prompt then starts on a
    line of its own, and there is no traceback)."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        line = ""
    if not line:
        sys.stderr.write("\n")
        return None
    return line.strip()


def main(argv: list[str]) -> int:
    try:
        args, rest = parser().parse_known_args(argv)
        from .chat import parser as chat_parser
        chat_args = chat_parser().parse_args(rest)  # the options for `chat`, checked now
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    from ..context.store_factory import open_store
    from .catalog import summaries, table
    store = open_store(args.state_dir)
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
    from .chat import chat
    workdir = row["working_dir"] or os.path.realpath(wd)
    return chat(args.state_dir, workdir, chat_args, _allowed(chat_args.allow), session_id=sid, first=args.task)


def _allowed(text: str) -> set[str]:
    return {a.strip() for a in text.split(",") if a.strip()}
