"""The shape of a node's stored JSON line: where its output's encoded JSON string lies in it.

A node's stored line is `orjson.dumps(Call.to_dict())` (fields in `core.model.FIELDS` order). For the
common node — input null, a string output, no reads — a reader can slice the output's encoded JSON
string out of the line instead of decoding the body (context/stored.py). `spans` finds it by
searching the line; the node index (store/node_index.py) records it for each line when a commit
writes the chunk (`packed_span`), so an open of a snapshot hands it to each node (`Call.line_span`)
and a render reads it (`output_span`) without searching.
"""

from __future__ import annotations

INPUT_KEYS = b',"input":null,"output":"'
_TAIL = b',"reads":[],"metadata":{'
STATUS_KEY = b',"status":'
QUOTE_AT = len(INPUT_KEYS) - 1  # from the start of INPUT_KEYS to the output's opening quote


def spans(raw: bytes) -> tuple[int, int, int] | None:
    """(start, end, meta) for a stored line whose input is null, output a string and reads empty:
    raw[start:end] is the output's encoded JSON string (quotes included), raw[meta:-1] the encoded
    metadata object and what may follow it. None for any other line.

    Sound for any content, because inside a JSON string every `"` follows a backslash (so `,"`
    never occurs in one), and a key nested in a value needs an object opened (`{`) before it: the
    first `,"input":null,"output":"` with no `{` between the line's own opening brace and it is a
    key of the top level; the output string ends at the first quote not escaped by an odd run of
    backslashes; the next `,"reads":[],"metadata":{` with no `{` between is the top level's again,
    so the metadata object starts there and lies before the line's final `}`."""
    i = raw.find(INPUT_KEYS)
    if i < 0 or raw[0] != 123 or raw.find(b"{", 1, i) >= 0:  # 123: "{"
        return None
    start = i + QUOTE_AT
    j = raw.find(b'"', start + 1)
    while j > 0 and raw[j - 1] == 92:  # a backslash before it: escaped if the run is odd
        k = j - 1
        while raw[k - 1] == 92:
            k -= 1
        if (j - k) % 2 == 0:
            break
        j = raw.find(b'"', j + 1)
    if j < 0:
        return None
    t = raw.find(_TAIL, j)
    if t < 0 or raw.find(b"{", j, t) >= 0 or raw[-1] != 125:  # 125: "}"
        return None
    return start, j + 1, t + len(_TAIL) - 1


def packed_span(raw: bytes) -> int:
    """`spans(raw)`'s output span as one int for the node index: start << 32 | end, 0 for none."""
    s = spans(raw)
    return 0 if s is None or s[1] >= 1 << 32 else s[0] << 32 | s[1]


def output_span(raw: bytes, packed: int) -> tuple[int, int] | None:
    """(start, end) of the output's encoded JSON string in `raw` (quotes included), or None when
    the line does not have the common shape: from `packed` (the node index's record of this very
    line, `Call.line_span`) when it fits the line — the keys before the opening quote, a quote at
    the end and the status key after it — else by searching (`spans`). The index is trusted as
    for the node's skeleton (it names the chunk blob it describes); the check keeps a stale or
    damaged record from slicing outside the output's place."""
    if packed:
        a, b = packed >> 32, packed & 0xFFFFFFFF
        if QUOTE_AT <= a < b and raw.startswith(INPUT_KEYS, a - QUOTE_AT) and raw[b - 1:b] == b'"' \
                and raw.startswith(STATUS_KEY, b):
            return a, b
    s = spans(raw)
    return None if s is None else (s[0], s[1])
