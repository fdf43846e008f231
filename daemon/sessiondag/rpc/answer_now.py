"""Answering a request in the read loop's own turn: a method's `now` form (registry.answers_now).

The ordinary way a request goes is a task of its own (connection.py): the read loop creates it, the
loop runs its first step in a later turn, the handler awaits what it needs. For the requests a
client sends most, one at a time, that is two loop turns and a task per request around work that
never has to wait (a lone session/append of a loaded session: a record and its fdatasync on the
loop, rpc/write_queue.py). A method may also register a synchronous `now(ctx, params)`, which the
read loop calls in place of creating the task, when this connection has no request in flight:

- it returns `LATER` when the request would have to wait for anything (a session to load, a lock,
  another request in flight): nothing was done, and the request takes the ordinary way;
- or its result, which is the answer;
- or raises, and the error is the answer (as a handler's would be);
- or returns an awaitable, which finishes the request as its task (its result or error).
"""

from __future__ import annotations

from typing import Final


class _Later:
    __slots__ = ()

    def __repr__(self) -> str:
        return "LATER"


LATER: Final = _Later()
