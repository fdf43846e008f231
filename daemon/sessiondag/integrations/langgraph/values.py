"""Channel values and writes as content-addressed blobs, growing lists stored as deltas.

A value is serialized with the saver's serde (`dumps_typed` -> (type, bytes)) and described by a
small JSON dict that a node's metadata carries:

    {"t": type, "d": base64}              values up to INLINE_MAX bytes, inline in the node (one
                                          fdatasync for the whole put: the journal record)
    {"t": type, "b": {"$blob": sha}}      larger ones: a git blob of the session (`put_blob`),
                                          content-addressed: the same bytes are stored once however
                                          many steps or threads' checkpoints hold them
    {"t": "empty"}                        a channel without a value at that version
    {"L": {"base": ver, "keep": k, "add": [element descriptors], "depth": n}}
                                          a list channel (a message history): the first k elements of
                                          the same channel at version `base`, then `add`

So a chat that grows by one message per step stores each message once, in the step that added it;
later steps reference it through the chain of bases (walked once per process: what a process
stored or loaded last is remembered, so the next put compares by identity and writes only the
new elements). A put's work is that of its new elements: the remembered list grows in place, and
the kept prefix is one identity scan in C (`kept`), never a Python loop over the history.
"""

from __future__ import annotations

import base64
import operator
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol

INLINE_MAX = 4096
LIST_MIN = 1
CACHE_BYTES = 64 << 20


class BlobCache:
    """Recently written or read blob bodies by sha (bytes are immutable), bounded by size."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit = limit
        self.size = 0
        self.items: OrderedDict[str, bytes] = OrderedDict()

    def get(self, sha: str) -> bytes | None:
        data = self.items.get(sha)
        if data is not None:
            self.items.move_to_end(sha)
        return data

    def put(self, sha: str, data: bytes) -> None:
        if sha in self.items or len(data) > self.limit // 4:
            return
        self.items[sha] = data
        self.size += len(data)
        while self.size > self.limit:
            _, old = self.items.popitem(last=False)
            self.size -= len(old)


@dataclass
class LastList:
    """What this process last stored or loaded for one list channel: the element objects (to find
    the unchanged prefix by identity) and their descriptors."""
    index: object
    version: str | int | float       # a ChannelVersions value
    elements: list[object]
    descs: list[dict[str, Any]]
    depth: int


class ValueCodec:
    def __init__(self, serde: SerializerProtocol, cache: BlobCache | None = None):
        self.serde = serde
        self.cache = cache or BlobCache()

    # --- single values -----------------------------------------------------------------------
    def encode(self, put_blob: Callable[[bytes], str], value: object) -> dict[str, Any]:
        t, data = self.serde.dumps_typed(value)
        if len(data) <= INLINE_MAX:
            return {"t": t, "d": base64.b64encode(data).decode()}
        sha = put_blob(data)
        self.cache.put(sha, data)
        return {"t": t, "b": {"$blob": sha}}

    def decode(self, load_blob: Callable[[str], bytes], desc: dict[str, Any]) -> Any:
        return self.serde.loads_typed((desc["t"], self.raw(load_blob, desc)))

    def raw(self, load_blob: Callable[[str], bytes], desc: dict[str, Any]) -> bytes:
        if "d" in desc:
            return base64.b64decode(desc["d"])
        sha = desc["b"]["$blob"]
        data = self.cache.get(sha)
        if data is None:
            data = load_blob(sha)
            self.cache.put(sha, data)
        return data

    # --- channel values ----------------------------------------------------------------------
    def encode_channel(self, put_blob: Callable[[bytes], str], value: Any, last: LastList | None,
                       index: object, version: str | int | float) -> tuple[dict[str, Any], LastList | None]:
        """The descriptor of a channel value, and the LastList to remember for a list (`last`
        itself, moved on to `version`, when the value only grew: the work is that of the new
        elements, plus one identity scan of the kept prefix in C)."""
        if type(value) is not list or len(value) < LIST_MIN:
            return self.encode(put_blob, value), None
        keep = kept(value, last.elements) if last is not None and last.index is index else 0
        added = [self.encode(put_blob, e) for e in value[keep:]]  # first: a refused element changes nothing
        if not keep:
            return ({"L": {"base": None, "keep": 0, "add": added, "depth": 0}},
                    LastList(index, version, list(value), list(added), 0))  # own lists: extended later
        assert last is not None  # keep > 0 only against a last list
        desc: dict[str, object] = {"L": {"base": last.version, "keep": keep, "add": added, "depth": last.depth + 1}}
        if keep == len(last.elements):  # it grew (or stayed): extend the remembered list in place
            last.elements.extend(value[keep:])
            last.descs.extend(added)
            last.version, last.depth = version, last.depth + 1
            return desc, last
        return desc, LastList(index, version, list(value), last.descs[:keep] + added, last.depth + 1)

    def elements(self, desc: dict[str, Any], lookup: Callable[[object], dict[str, Any] | None]) -> list[dict[str, Any]]:
        """The element descriptors of a list descriptor; `lookup(version)` finds the base's."""
        parts = []
        while True:
            lst = desc["L"]
            parts.append(lst["add"])
            if lst["base"] is None:
                break
            base = lookup(lst["base"])
            if base is None or "L" not in base:
                raise ValueError(f"list channel base version {lst['base']!r} is missing")
            parts.append(("keep", lst["keep"]))
            desc = base
        out: list[dict[str, Any]] = []
        # parts: [add_n, ("keep", k_n), add_{n-1}, ..., add_0]; rebuild from the oldest
        for part in reversed(parts):
            if isinstance(part, tuple):
                del out[part[1]:]
            else:
                out.extend(part)
        return out

    def decode_channel(self, load_blob: Callable[[str], bytes], desc: dict[str, Any],
                       lookup: Callable[[object], dict[str, Any] | None]) -> tuple[Any, list[dict[str, Any]] | None]:
        """(value, element descriptors when it is a list channel)."""
        if "L" not in desc:
            return self.decode(load_blob, desc), None
        descs = self.elements(desc, lookup)
        return [self.decode(load_blob, d) for d in descs], descs


def kept(value: list[object], elements: list[object]) -> int:
    """How many leading elements of `value` are the very objects of `elements` (identity, never
    `==`: an equal object may serialize differently, 1 and True). All of them is one scan in C."""
    n = min(len(value), len(elements))
    if all(map(operator.is_, value, elements)):  # map stops at the shorter one
        return n
    keep = 0
    while value[keep] is elements[keep]:  # stops before n: some element differs
        keep += 1
    return keep


# --- what a reader of the DAG sees of a list element ----------------------------------------
PREVIEW = 160


def message_preview(m: object) -> str | None:
    """`type: text` of a LangChain message (or a role/content dict), cut to PREVIEW chars."""
    kind = getattr(m, "type", None) or (m.get("role") if isinstance(m, dict) else None)
    content = getattr(m, "content", None) if not isinstance(m, dict) else m.get("content")
    if not isinstance(kind, str) or content is None:
        return None
    text = content if isinstance(content, str) else str(content)
    calls = getattr(m, "tool_calls", None)
    if calls:
        text += " " + ", ".join(f"[{c.get('name')}({c.get('args')})]" for c in calls if isinstance(c, dict))
    text = squeezed(text)
    return f"{kind}: {text[:PREVIEW]}{'…' if len(text) > PREVIEW else ''}"


def squeezed(text: str, room: int = 4 * PREVIEW) -> str:
    """`" ".join(text.split())`, or a prefix of it longer than PREVIEW (all a preview shows of it):
    the squeeze of the text's first `room` characters is a prefix of the whole one, so a long
    message costs the squeeze of its head, not of all of it."""
    if len(text) <= room:
        return " ".join(text.split())
    head = " ".join(text[:room].split())
    return head if len(head) > PREVIEW else " ".join(text.split())


def preview_or_none(m: object) -> str | None:
    try:  # cosmetic: whatever a channel holds, a preview never fails a put
        return message_preview(m)
    except Exception:
        return None
