"""`sessiondag chat`: an interactive terminal chat with a session, through the daemon (started when
none runs), in the terminal's own scrollback.

    sessiondag chat [--continue | --session ID | --new] [--workdir DIR] [--state-dir DIR]
                    [--provider KIND|PROFILE] [--model M] [--script FILE] [--temperature T]
                    [--max-tokens N] [--allow write,run]

Without --continue or --session a new session starts with the first message. prompt_toolkit draws
the input line only (multi-line editing, history in `<state dir>/chat_history`, completion of the
slash commands): the replies are printed into the normal scrollback, as in a shell, so a long
session can be scrolled, searched and copied with the terminal's own tools. chat_app.py runs the
chat, chat_view.py draws it, chat_commands.py holds the slash commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Awaitable

from .common import NoSession, Parser, UsageError, command, exit_code

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyPressEvent
    from sessiondag_client import AsyncClient

    from ..store.handles import SessionStore
    from .model import ModelFlags

PROG = "sessiondag chat"


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Chat with a session in the terminal (through the daemon).")
    p.add_argument("-c", "--continue", dest="cont", action="store_true",
                   help="continue the most recent session of the working dir")
    p.add_argument("--session", help="continue this session (id or unique prefix)")
    p.add_argument("--new", action="store_true", help="start a new session (the default)")
    p.add_argument("--workdir", default=None, help="working dir (default: the current directory)")
    p.add_argument("--state-dir", default=None, help="state directory (default: $SESSIONDAG_HOME …)")
    p.add_argument("--provider", help="scripted | openai | anthropic | a profile of the settings file")
    p.add_argument("--model", help="model name (default: the session's, else the profile's)")
    p.add_argument("--script", help="script file (JSON or YAML) for the scripted provider")
    p.add_argument("--temperature", type=float, help="sampling temperature (0-2)")
    p.add_argument("--max-tokens", type=int, help="output tokens per model call at most")
    p.add_argument("--allow", default="", help="permissions granted without asking: write,run")
    return p


def _pick(store: SessionStore, args: argparse.Namespace, workdir: str) -> str | None:
    from .catalog import summaries
    from .common import resolve_session
    if args.cont:
        rows = [r for r in summaries(store, workdir) if r["readable"]]
        if not rows:
            raise NoSession(f"for working dir {workdir}")
        return rows[0]["session_id"]
    if args.session:
        return resolve_session(store, args.session)
    return None


def prompt_session(state_dir: str) -> PromptSession[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings
    from .chat_app import history_path
    from .chat_commands import completer
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        b = event.current_buffer
        if b.text.endswith("\\"):  # a line ending in a backslash continues on the next
            b.delete_before_cursor(1)
            b.insert_text("\n")
        else:
            b.validate_and_handle()
    return PromptSession(history=FileHistory(history_path(state_dir)), completer=completer(),
                         complete_while_typing=True, key_bindings=kb, multiline=True,
                         prompt_continuation=lambda width, line, soft: "… ".rjust(width))


@command(PROG)
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if sum((args.cont, bool(args.session), args.new)) > 1:
        raise UsageError("--continue, --session and --new are exclusive")
    allowed = {a.strip() for a in args.allow.split(",") if a.strip()}
    if allowed - {"write", "run", "all"}:
        print(f"{PROG}: unknown permission(s) {sorted(allowed - {'write', 'run', 'all'})}; use write,run",
              file=sys.stderr)
        return 2
    workdir = os.path.realpath(args.workdir or os.getcwd())
    return chat(args.state_dir, workdir, args, allowed)


def chat(state_dir: str | None, workdir: str, args: argparse.Namespace, allowed: set[str],
         session_id: str | None = None, first: str | None = None) -> int:
    """Pick the session (unless given), check the model here, then run the chat."""
    from ..runtime.providers import ProviderError
    from ..context.store_factory import open_store
    from .model import flags_of, resolve_model
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(f"{PROG}: needs a terminal; for scripts use `sessiondag run`", file=sys.stderr)
        return 2
    store = open_store(state_dir)
    try:
        sid = session_id or _pick(store, args, workdir)
        resolve_model(store, sid, flags_of(args))  # a model this shell cannot make is refused now
        sd = store.state_dir
    except (NoSession, ProviderError, UsageError) as e:
        return exit_code(PROG, e, ((NoSession, 3), (ProviderError, 2)))
    finally:
        store.close()
    import asyncio
    return asyncio.run(_run(sd, workdir, sid, flags_of(args), allowed, first))


async def _run(state_dir: str, workdir: str, sid: str | None, flags: ModelFlags, allowed: set[str],
               first: str | None) -> int:
    from sessiondag_client import connect
    from .chat_app import Chat
    def dial() -> Awaitable[AsyncClient]:
        return connect(state_dir=state_dir, auto_start=True, client_name=PROG)
    ch = Chat(await dial(), state_dir=state_dir, workdir=workdir, session_id=sid, flags=flags, allowed=allowed)
    ch.connect = dial
    try:
        ch.session = prompt_session(state_dir)
        return await ch.main(first)
    finally:
        await ch.c.aclose()
