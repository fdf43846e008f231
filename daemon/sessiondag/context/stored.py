"""Reading a node's stored JSON line without decoding its body.

A node loaded from a snapshot keeps its body as the JSON line the store wrote (`Call.stored_line`,
`orjson.dumps(Call.to_dict())`: fields in `core.model.FIELDS` order). Rendering a long branch cold
would otherwise decode every body to Python objects only to encode the same strings again into the
reply. Here the common node — input null, a string output, no reads — is read by slicing: the
output's encoded JSON string goes into the reply as an `orjson.Fragment`.

A line whose top level does not have exactly that shape gives None and the caller decodes the
body as usual. The lines are the store's own (orjson, fixed field order, no duplicate keys): the
values are the same either way, and so are the bytes.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..core.model import Call

_INPUT = b',"input":null,"output":"'
_TAIL = b',"reads":[],"metadata":{'
_tokens: dict[str, bytes] = {}


def text_body(c: Call) -> tuple[bytes, bytes] | None:
    """(the encoded JSON string of the output, quotes included; the encoded metadata object) for
    an undecoded node whose input is null, output a string and reads empty — else None.

    The checks, sound for any content because inside a JSON string every `"` follows a backslash
    (so `,"` never occurs in one): the first `,"input":null,"output":"` is a key of the top level
    (no `{` or `[` before it); the output string ends at the first quote not escaped by an odd run
    of backslashes; the next `,"reads":[],"metadata":{` is the top level's (only plain scalars —
    status, caller, predecessor — lie between), and the metadata object runs to the line's end."""
    raw = c.stored_line()
    if raw is None or not raw.startswith(b'{"id":"'):
        return None
    i = raw.find(_INPUT)
    if i < 0 or raw.find(b"{", 1, i) >= 0 or raw.find(b"[", 1, i) >= 0:
        return None
    start = i + len(_INPUT) - 1
    j = raw.find(b'"', start + 1)
    while j > 0 and raw[j - 1] == 92:  # a backslash before it: escaped if the run is odd
        k = j - 1
        while raw[k - 1] == 92:
            k -= 1
        if (j - k) % 2 == 0:
            break
        j = raw.find(b'"', j + 1)
    if j < 0 or not raw.startswith(b',"status":"', j + 1):
        return None
    t = raw.find(_TAIL, j)
    if t < 0 or raw.find(b"{", j, t) >= 0 or raw.find(b"[", j, t) >= 0 or raw[-1] != 125:  # "}"
        return None
    return raw[start:j + 1], raw[t + len(_TAIL) - 1:-1]


def meta_has(c: Call, key: str) -> bool:
    """`key in c.metadata`, answered from the stored line when it cannot hold that key (a plain
    key is always written as orjson writes it), so a negative answer decodes nothing."""
    raw = c.stored_line()
    if raw is not None:
        token = _tokens.get(key)
        if token is None:
            token = _tokens[key] = orjson.dumps(key)
        if token not in raw:
            return False
    return key in c.metadata
