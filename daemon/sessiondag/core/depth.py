"""Values a node may hold must encode back: refuse, before anything is written, a field nested so
deep that a JSON encoder gives up on it (orjson stops at 254 levels) once the node travels inside
a journal record, a snapshot chunk or an RPC answer.

A field may nest at most MAX_DEPTH levels of objects/arrays; the rest of the encoder's budget is
left for the wrappers around a node (journal record, RPC envelope, notification).
"""

from __future__ import annotations

import threading

import orjson

from .errors import InvalidNodeError

ENCODER_LIMIT = 254   # orjson's nesting limit (containers)
MAX_DEPTH = 200       # what a node field may use of it


class TooDeepError(InvalidNodeError):
    """A value nested deeper than MAX_DEPTH levels: it could be stored but never sent back.
    Reported as invalid params (-32602) over RPC."""

    code = "invalid_params"

    def __init__(self, what: str):
        super().__init__(f"{what} is nested more than {MAX_DEPTH} levels deep; flatten it")
        self.what = what

    def data(self) -> dict[str, object]:
        return {"what": self.what, "max_depth": MAX_DEPTH}


def check_encodable(value: object, what: str) -> None:
    """Raise TooDeepError if `value` nests deeper than MAX_DEPTH, InvalidNodeError if it is not
    JSON at all. One encode in C (no Python walk, no recursion); scalars cost nothing."""
    if not isinstance(value, (dict, list, tuple)):
        return
    wrapped: object = value
    for _ in range(ENCODER_LIMIT - MAX_DEPTH):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError as e:
        if "recursion" in str(e).lower():
            raise TooDeepError(what) from None
        raise InvalidNodeError(f"{what} is not JSON-encodable: {e}") from None


_WRAPS = threading.local()  # per thread: ENCODER_LIMIT - MAX_DEPTH nested lists, the innermost one empty


def check_node_fields(input: object, output: object, metadata: object) -> None:
    """check_encodable of a node's three fields in one encode, on nested lists built once per
    thread (the append path's: three wraps of 54 new lists each cost more than the encode). On a
    refusal each field is checked alone, to name it (and to decide exactly as check_encodable)."""
    w: tuple[list[object], list[object]] | None = getattr(_WRAPS, "lists", None)
    if w is None:
        inner: list[object] = []
        outer: list[object] = inner
        for _ in range(ENCODER_LIMIT - MAX_DEPTH - 1):  # the fields sit in `inner`: one level in already
            outer = [outer]
        w = _WRAPS.lists = (outer, inner)
    outer, inner = w
    inner.extend((input, output, metadata))
    try:
        orjson.dumps(outer)
    except orjson.JSONEncodeError:
        pass
    else:
        return
    finally:
        inner.clear()
    check_encodable(input, "input")
    check_encodable(output, "output")
    check_encodable(metadata, "metadata")  # all three pass alone: a scalar no encoder takes is not this check's
