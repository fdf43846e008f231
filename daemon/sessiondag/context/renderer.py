"""One interface for rendering a chain position to provider messages, two implementations.

- `REFERENCE`: the rules of render.py and messages.py and nothing else. Every node's body is
  decoded, every message is built from the decoded values (`render_messages(fast=False)`), and the
  bytes are `orjson.dumps` of each message. No prefix memo, no stored line read.
- `FAST`: the same rules, accelerated. The prefix memo (prefix.py) keeps the nodes and messages of
  the history between renders; a node whose body is still its stored JSON line is rendered by
  slicing that line (stored.py) — which relies on the store writing lines with orjson in the field
  order of core/model.py's FIELDS. `encoded` is what session/render sends (`render_bytes`);
  `messages` are plain dicts (what the runtime hands a provider), decoded from those bytes.

The invariant: for every session, head, frame, format and manifest both give equal messages and the
same bytes (`b"[" + b",".join(encoded) + b"]" == orjson.dumps(messages)`), manifests included.
tests/context/test_renderers.py holds it on generated sessions (hypothesis); tests/context/
test_encoded.py covers the fast path's parts. `renderer_for(session)` picks FAST unless the
`rendering.fast_render` setting (SESSIONDAG_FAST_RENDER) is off.
"""

from __future__ import annotations

from typing import Protocol

from orjson import dumps

from ..store.session import Session
from .aging import Manifest
from .encoded_messages import Message
from .messages import render_bytes, render_messages


class Renderer(Protocol):
    name: str

    def messages(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                 format: str = "openai", manifest: Manifest | None = None) -> tuple[list[Message], Manifest]:
        """(wire messages as plain values — treat them as read-only, the memo may share them —,
        the manifest to record)."""
        ...

    def encoded(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                format: str = "openai", manifest: Manifest | None = None) -> tuple[list[bytes], Manifest]:
        """(each message's JSON encoding, the manifest): what session/render splices into its reply."""
        ...


class _Reference:
    name = "reference"

    def messages(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                 format: str = "openai", manifest: Manifest | None = None) -> tuple[list[Message], Manifest]:
        return render_messages(session, head_id, frame=frame, format=format, manifest=manifest, fast=False)

    def encoded(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                format: str = "openai", manifest: Manifest | None = None) -> tuple[list[bytes], Manifest]:
        msgs, m = self.messages(session, head_id, frame=frame, format=format, manifest=manifest)
        return [dumps(x) for x in msgs], m


class _Fast:
    name = "fast"

    def messages(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                 format: str = "openai", manifest: Manifest | None = None) -> tuple[list[Message], Manifest]:
        return render_messages(session, head_id, frame=frame, format=format, manifest=manifest)

    def encoded(self, session: Session, head_id: str | None = None, *, frame: str | None = None,
                format: str = "openai", manifest: Manifest | None = None) -> tuple[list[bytes], Manifest]:
        return render_bytes(session, head_id, frame=frame, format=format, manifest=manifest)


REFERENCE: Renderer = _Reference()
FAST: Renderer = _Fast()


def renderer_for(session: object) -> Renderer:
    """The renderer the session's settings choose (`rendering.fast_render`, default on)."""
    settings = getattr(session, "settings", None)
    fast = getattr(settings(), "fast_render", True) if callable(settings) else True
    return FAST if fast else REFERENCE
