"""Values a node may hold must encode back: refuse, before anything is written, a field nested so
deep that a JSON encoder gives up on it (orjson stops at 254 levels) once the node travels inside
a journal record, a snapshot chunk or an RPC answer.

A field may nest at most MAX_DEPTH levels of objects/arrays; the rest of the encoder's budget is
left for the wrappers around a node (journal record, RPC envelope, notification).
"""

from __future__ import annotations

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
