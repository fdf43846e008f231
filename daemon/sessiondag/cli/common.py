"""What every subcommand shares: one-line usage errors (exit 2), one-line failures, the state dir,
and session/node ids given as short unique prefixes."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Callable, NoReturn, ParamSpec, Sequence

if TYPE_CHECKING:
    from ..store.handles import SessionStore
    from ..store.session import Session

P = ParamSpec("P")

EXIT_USAGE = 2

Codes = Sequence[tuple["type[BaseException] | tuple[type[BaseException], ...]", int]]
"""(error classes, exit status) pairs, the first that matches wins (a subclass before its base)."""


class UsageError(Exception):
    """Bad input from the command line: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `sessiondag run: <message> (see --help)`, exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def fail(prog: str, message: str, code: int = 1) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def exit_code(prog: str, e: BaseException, codes: Codes = ()) -> int:
    """The exit status of a command's failure `e`, its one line `prog: message` on stderr: argparse's
    exit (0 for --help, else 2, its message already printed), a UsageError 2, else the first entry
    of `codes` that `e` is an instance of. Anything else is raised again."""
    if isinstance(e, SystemExit):
        return 0 if e.code in (0, None) else EXIT_USAGE
    for kinds, code in ((UsageError, EXIT_USAGE), *codes):
        if isinstance(e, kinds):
            return fail(prog, str(e), code)
    raise e


def command(prog: str, codes: Callable[[], Codes] = lambda: ()) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """A command's `main` whose failures end as `exit_code` says. `codes` is called only on a
    failure, so its error classes may come from the modules the command imports lazily."""
    def wrap(main: Callable[P, int]) -> Callable[P, int]:
        @functools.wraps(main)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - exit_code raises what it does not map
                if isinstance(e, (KeyboardInterrupt, GeneratorExit)):
                    raise
                return exit_code(prog, e, codes())
        return guarded
    return wrap


class NoSession(Exception):
    """`no session X`: the same words everywhere an id is taken."""

    def __init__(self, ref: str):
        super().__init__(f"no session {ref}")
        self.ref = ref


def resolve_session(store: SessionStore, ref: str) -> str:
    """A session id from a full id or a unique prefix; NoSession / UsageError (ambiguous) otherwise."""
    if _exists(store, ref):
        return ref
    from .catalog import session_ids
    names = [n for n in session_ids(store) if n.startswith(ref)] if ref else []
    if len(names) == 1:
        return names[0]
    if len(names) > 1:
        raise UsageError(f"session prefix {ref!r} is ambiguous: {', '.join(sorted(names)[:5])}"
                         + (" …" if len(names) > 5 else ""))
    from ..core.ids import check_session_id
    check_session_id(ref)  # a malformed id is a usage error (InvalidSessionIdError), not a missing session
    raise NoSession(ref)


def _exists(store: SessionStore, ref: str) -> bool:
    try:
        return store.exists(ref)
    except Exception:  # noqa: BLE001 - an invalid id does not exist
        return False


def resolve_node(session: Session, ref: str) -> str:
    """A node id of `session` from a full id, a unique prefix, or `#SEQ`."""
    g = session.graph
    if ref in g.nodes:
        return ref
    if ref.startswith("#") and ref[1:].isdigit():
        seq = int(ref[1:])
        for nid, c in g.nodes.items():
            if c.seq == seq:
                return nid
        raise UsageError(f"no node with seq {seq} in session {session.id}")
    hits = [nid for nid in g.nodes if nid.startswith(ref)] if ref else []
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise UsageError(f"node prefix {ref!r} is ambiguous in session {session.id}")
    raise UsageError(f"no node {ref} in session {session.id}")
