"""The text of model calls while they stream, for the live viewer (live.py): the daemon's
`agent/did_update` `text_delta` notifications (rpc_schema/agent.json) accumulated per node, and
what of it the page may be shown.

Shown text passes the redactor like every other string, but a secret can arrive in pieces: the
text is shown up to its last whitespace only (a key is one word, so it is never shown half-typed)
and not from an unfinished `-----BEGIN …` block on (a private key's), and all of it is masked again
at each flush (a word that completes a pattern replaces what was shown before it). Clipped to the
report's field limit. The node's own output replaces all of this once it ends.

Patches to the page say `[row, at, text]`: keep the first `at` UTF-16 code units of what it shows
(JavaScript's string indices), then `text` — idempotent, so a patch seen twice changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .bodies import Limits, clip

MAX_STREAMS = 64                 # running calls followed at once (the oldest is dropped past it)


@dataclass
class Stream:
    parts: list[str] = field(default_factory=list)
    size: int = 0
    sent: str = ""               # what the page was last told
    fresh: bool = False          # deltas since the last flush


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (in characters)."""
    n = min(len(a), len(b))
    k = len(os.path.commonprefix([a[:n], b[:n]]))
    return k


class Streams:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.by_node: dict[str, Stream] = {}

    def add(self, node_id: str, delta: str) -> None:
        st = self.by_node.get(node_id)
        if st is None:
            if len(self.by_node) >= MAX_STREAMS:
                self.by_node.pop(next(iter(self.by_node)))
            st = self.by_node[node_id] = Stream()
        if st.size <= self.limits.max_field_bytes:     # past the limit nothing more is shown anyway
            st.parts.append(delta)
            st.size += len(delta.encode("utf-8", "replace"))
            st.fresh = True

    def drop(self, node_id: str) -> None:
        self.by_node.pop(node_id, None)

    def fresh(self) -> list[str]:
        return [k for k, st in self.by_node.items() if st.fresh]

    def shown(self, node_id: str) -> str | None:
        """What the page may show of `node_id`'s streamed text so far (None: nothing streamed)."""
        st = self.by_node.get(node_id)
        if st is None:
            return None
        raw = "".join(st.parts)
        st.parts = [raw]
        text = self.limits.redactor.text(raw)
        begin = text.rfind("-----BEGIN ")
        if begin >= 0 and "-----END " not in text[begin:]:
            text = text[:begin]
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
        text = text[:cut + 1] if cut >= 0 else ""
        return clip(text, self.limits.max_field_bytes)[0]

    def synced(self, node_id: str) -> str | None:
        """What the page may show of `node_id` now, as the row's body tells it (the page holds it)."""
        st = self.by_node.get(node_id)
        text = self.shown(node_id)
        if st is not None and text is not None:
            st.sent, st.fresh = text, False
        return text

    def patch(self, node_id: str, row: int) -> list[int | str] | None:
        """The page's patch for `node_id` shown at `row`, or None when it shows the same already."""
        st = self.by_node.get(node_id)
        text = self.shown(node_id)
        if st is None or text is None:
            return None
        st.fresh = False
        if text == st.sent:
            return None
        k = common_prefix(st.sent, text)
        st.sent = text
        return [row, utf16_len(text[:k]), text[k:]]
