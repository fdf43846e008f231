"""Reading a node's stored JSON line without decoding its body.

A node loaded from a snapshot keeps its body as the JSON line the store wrote (`Call.stored_line`,
`orjson.dumps(Call.to_dict())`: fields in `core.model.FIELDS` order). Rendering a long branch cold
would otherwise decode every body to Python objects only to encode the same strings again into the
reply. Here the common node — input null, a string output, no reads — is read by slicing: the
output's encoded JSON string goes into the reply as it is (an `orjson.Fragment`, or spliced into the
message's bytes: `openai_messages`).

A line whose top level does not have exactly that shape gives None and the caller decodes the
body as usual. The lines are the store's own (orjson, fixed field order, no duplicate keys): the
values are the same either way, and so are the bytes.

Cost: a few searches over the short parts of the line and one `memchr` for the output's end, about
a microsecond a node whatever its size (`spans`, store/line_shape.py); for a node opened from an
indexed snapshot, the index's record of where the output lies, checked against the line
(`output_span`): a few comparisons.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import is_

import orjson

from ..core.model import Call
from ..store.node_index import ChunkView, DeferredChunk, body_of
from ..store.line_shape import INPUT_KEYS, QUOTE_AT, STATUS_KEY, output_span, spans as spans  # spans: the shape, read here
from .graphinfo import SUMMARY_NAME

_tokens: dict[str, bytes] = {}
_SPILLED = b'"spilled"'
_PREFETCH = b'memory_prefetch"'
_USER = b'{"role":"user","content":'
_ASSISTANT = b'{"role":"assistant","content":'


def text_body(c: Call) -> tuple[bytes, bytes] | None:
    """(the encoded JSON string of the output, quotes included; the encoded metadata object) for
    an undecoded node whose input is null, output a string and reads empty — else None (`spans`)."""
    raw = c.stored_line()
    if raw is None:
        return None
    s = spans(raw)
    if s is None:
        return None
    return raw[s[0]:s[1]], raw[s[2]:-1]


class Noted:
    """OpenAI messages encoded while the node memo was extended for a render that will encode them
    (`scan_run`, reading each line once), for the message pass after it (`openai_messages`): for the
    memo's nodes from index `base` on, the node's body as it was read (`node_index.body_of`: its stored
    line, the chunk it still lay in, or None) and the message (None: the node does not render as
    one plain message). A node's body stays the same object until the node changes (a change
    sets it to None) or its chunk gives it its line (a new object): a note is used only while the
    node's body is still the very object noted."""

    __slots__ = ("base", "lines", "msgs")

    def __init__(self, base: int = 0):
        self.base = base
        self.lines: list[object] = []
        self.msgs: list[bytes | None] = []

    def at(self, i: int) -> None:
        """The next nodes noted are the memo's nodes from index i on."""
        gap = i - self.base - len(self.lines)
        if gap < 0:
            self.base, self.lines, self.msgs = i, [], []
        elif gap:
            self.lines += [None] * gap
            self.msgs += [None] * gap

    def window(self, i: int, n: int) -> tuple[list[object], list[bytes | None]] | None:
        """(bodies, messages) noted for the memo's nodes [i, i + n), if all were."""
        j = i - self.base
        if j < 0 or j + n > len(self.lines):
            return None
        return self.lines[j:j + n], self.msgs[j:j + n]


def scan_run(nodes: list[Call], noted: Noted | None = None) -> list[Call]:
    """The nodes that have `spilled` in their metadata (`meta_has`), searching a stored line only
    after the output when `spans` finds it — and, given `noted`, noting each node's line and OpenAI
    message there (see `Noted.at`). A node's stored line, once read, stays the same object until the
    node changes, and then it has none: a note is used only with the very line it was taken from.

    The loop is `output_span` and `_message` inlined for the common line (the index's span fits,
    a user node without memory prefetch or a completed llm reply): about a third of the per-node
    cost of a cold render of a long chat went to those calls."""
    found: list[Call] = []
    add_msg: Callable[[bytes | None], None]   # called only where add_line is not None
    add_line, add_msg = (noted.lines.append, noted.msgs.append) if noted is not None else (None, None)  # type: ignore[assignment]
    user, assistant, prefetch, spilled, keys, after, ni = _USER, _ASSISTANT, _PREFETCH, _SPILLED, INPUT_KEYS, STATUS_KEY, QUOTE_AT
    join = b"".join
    chunk: DeferredChunk | None = None
    view: ChunkView | None = None
    # a node's line is raw[base:end]: its own stored line (base 0), or its place in the chunk it
    # still lies in (DeferredChunk.view: sliced there, no copy of the line made); s is not None
    # only where raw is bytes: the ignores below tell mypy so
    raw: bytes | None
    for c in nodes:
        ref = body_of(c)  # what the node's body is now: its line, its chunk, None (see Noted)
        base = 0
        if type(ref) is DeferredChunk:
            if ref is not chunk:
                chunk, view = ref, ref.view()
            i = view[2].get(id(c)) if view is not None else None
            if view is None or i is None:  # the chunk gave out its lines meanwhile: the node holds its own
                raw = c.stored_line()
                ref = body_of(c)
                end = len(raw) if raw is not None else 0
            else:
                raw, base, end = view[0], view[1][i], view[1][i + 1] - 1
        else:
            raw = c.stored_line()
            end = len(raw) if raw is not None else 0
        if raw is None:
            s = None
        else:
            packed = c.line_span
            a, b = (packed >> 32) + base, (packed & 0xFFFFFFFF) + base
            if packed and ni + base <= a < b and raw.startswith(keys, a - ni, end) and raw.startswith(after, b, end) \
                    and raw[b - 1] == 34:
                s = a, b  # as output_span checks the index's span (34: '"'; in range after the startswith)
            else:
                if end != len(raw):  # a line in its chunk: searched as a line of its own
                    raw, base = raw[base:end], 0
                    end = len(raw)
                s = output_span(raw, 0)
        if add_line is not None:
            add_line(ref)
            if s is None:
                add_msg(None)
            else:
                a, b = s
                role = c.role
                if b - a <= 2:
                    add_msg(None)
                elif role == "user":
                    add_msg(None if raw.find(prefetch, b, end) >= 0 else join((user, raw[a:b], b"}")))  # type: ignore[union-attr,index]
                elif role == "llm" and c.status == "completed" and c.name != SUMMARY_NAME:
                    add_msg(join((assistant, raw[a:b], b"}")))  # type: ignore[index]
                else:
                    add_msg(_message(c, raw, a, b, end))  # type: ignore[arg-type]
        if s is not None:
            if raw.find(spilled, s[1], end) >= 0 and "spilled" in c.metadata:  # type: ignore[union-attr]
                found.append(c)
        elif raw is not None:  # meta_has on the line: `spilled` written as orjson writes a key
            if raw.find(spilled, base, end) >= 0 and "spilled" in c.metadata:
                found.append(c)
        elif "spilled" in c.metadata:
            found.append(c)
    return found


def openai_messages(nodes: list[Call],
                    noted: tuple[list[object], list[bytes | None]] | None = None) -> list[bytes | None]:
    """For each node, its OpenAI chat message encoded when it is an undecoded user or llm node that
    renders as one plain text message (`_message`), else None: render that node as usual. Equal to
    `orjson.dumps` of the plain path's message. `noted`: the nodes' (lines, messages) from
    `Noted.window`, taken for each node whose line is still the one noted."""
    if noted is not None and len(noted[0]) == len(nodes) and all(map(is_, map(body_of, nodes), noted[0])):
        return noted[1]  # every body still the one noted (the common case): in one pass at C level
    out: list[bytes | None] = []
    add = out.append
    lines, msgs = noted if noted is not None else ((), ())
    for i, c in enumerate(nodes):
        if i < len(lines) and lines[i] is body_of(c):
            add(msgs[i])
            continue
        raw = c.stored_line()
        if raw is None:
            add(None)
        else:
            s = output_span(raw, c.line_span)
            add(_message(c, raw, s[0], s[1]) if s is not None else None)
    return out


def _message(c: Call, raw: bytes, start: int, end: int, stop: int | None = None) -> bytes | None:
    """The message of a node whose stored line `raw` (or raw[:stop], where the line is part of its
    chunk) has the common shape with its output at [start, end): a user node without memory
    prefetch, an llm node's reply (no status note, not a summary) — its input is null, so an inner
    call has no input message either; else None (an empty text too)."""
    if end - start <= 2:
        return None
    role = c.role
    if role == "user":
        # the key after the output (in a string its quote would be escaped), or a value like it
        return None if raw.find(_PREFETCH, end, stop) >= 0 else b"".join((_USER, raw[start:end], b"}"))
    if role != "llm" or c.status == "error" or c.status == "cancelled" or c.name == SUMMARY_NAME:
        return None
    return b"".join((_ASSISTANT, raw[start:end], b"}"))


def meta_has(c: Call, key: str) -> bool:
    """`key in c.metadata`, answered from the stored line when it cannot hold that key (a plain
    key is always written as orjson writes it), so a negative answer decodes nothing."""
    raw = c.stored_line()
    if raw is not None:
        token = _tokens.get(key)
        if token is None:
            token = _tokens[key] = orjson.dumps(key)
        if raw.find(token) < 0:
            return False
    return key in c.metadata
