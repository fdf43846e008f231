"""The numbered patches of the live document (live.py): what a page catches up from.

Every patch gets the next version (`v`, and the SSE `id:` of its event); a rebuilt document gets a
version too, as a `reset` event saying why (the page fetches the document again). The last LOG
events are kept, so a page that fetched the document at version V (or an EventSource reconnecting
with Last-Event-ID V) gets every event after V, or one `reset` ("behind") when they are gone.

Not locked: the live document calls it holding its condition, which it notifies after each add.
"""

from __future__ import annotations

from collections import deque

import orjson

from .page_types import Patch

LOG = 4000               # events kept for a page that is catching up


class PatchLog:
    def __init__(self) -> None:
        self.version = 0
        self.entries: deque[tuple[int, bytes]] = deque(maxlen=LOG)

    def add(self, kind: str, patch: Patch) -> int:
        """Number `patch` (its `v`) and keep it as the next `kind` event; its version."""
        self.version += 1
        patch["v"] = self.version
        self.entries.append((self.version, event(self.version, kind, orjson.dumps(patch))))
        return self.version

    def rebuilt(self, why: str | None) -> int:
        """The document was built again: its version, and for pages already open (`why` is None
        the first time, when there are none) a `reset` saying why."""
        self.version += 1
        if why is not None:
            self.entries.append((self.version, event(self.version, "reset", orjson.dumps({"why": why}))))
        return self.version

    def after(self, version: int) -> list[bytes]:
        """The events after `version`, oldest first; one `reset` when some of them are gone."""
        if self.version <= version:
            return []
        if not self.entries or self.entries[0][0] > version + 1:
            return [event(self.version, "reset", b'{"why": "behind"}')]
        out = []
        for v, data in reversed(self.entries):
            if v <= version:
                break
            out.append(data)
        out.reverse()
        return out


def event(version: int, kind: str, data: bytes) -> bytes:
    """One server-sent event: its id (the version), its kind, its JSON data."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (version, kind.encode(), data)
