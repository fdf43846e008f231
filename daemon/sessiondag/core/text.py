"""Text that always encodes: what the store and the wire can carry (UTF-8, no lone surrogates).

Python strs may hold lone surrogates (a JSON `\\ud800` escape decoded by the stdlib, a
surrogate-escaped file name); orjson, the journal and the wire refuse them. `encodable` replaces each
lone surrogate with U+FFFD (a proper pair becomes its character); `encodable_value` does it for every
str in a JSON-like value, keys included. Both return their argument itself when nothing needs it.
"""

from __future__ import annotations

from typing import Any


def encodable(s: str) -> str:
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def encodable_value(v: Any) -> Any:  # a JSON value, same shape (tuples become lists): the caller knows it
    if isinstance(v, str):
        return encodable(v)
    if isinstance(v, dict):
        return {encodable(k) if isinstance(k, str) else k: encodable_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encodable_value(x) for x in v]
    return v
