"""Attachments: images and files as node content, stored once by reference.

`attach` stores the body in the session's git object store (content-addressed, so the same bytes
attached twice are stored once) and returns the content part to put in a node's content list:
    {"type": "image" | "file", "$blob": <git blob id>, "media_type": …, "name": …, "size": <bytes>}
`type` is "image" for image/* media. Put it in a list next to text parts, e.g.
    Call("user", "alice", output=[{"type": "text", "text": "what is this?"}, attach(s, png, …)])
Rendering loads the body: images become base64 blocks (OpenAI image_url data URL / Anthropic image
source); text-like files are inlined in a <file> block; PDFs go as file/document blocks.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import InvalidNodeError
from ..store.session import Session


def attach(session: Session, data: bytes, *, media_type: str, name: str) -> dict[str, str | int]:
    if not isinstance(data, (bytes, bytearray)):
        raise InvalidNodeError("attachment data must be bytes")
    if not isinstance(media_type, str) or "/" not in media_type:
        raise InvalidNodeError(f"media_type must look like 'type/subtype', got {media_type!r}")
    if not isinstance(name, str) or not name:
        raise InvalidNodeError("an attachment needs a name")
    sha = session.put_blob(bytes(data))
    kind = "image" if media_type.startswith("image/") else "file"
    return {"type": kind, "$blob": sha, "media_type": media_type, "name": name, "size": len(data)}


def load_attachment(session: Session, part: Mapping[str, object]) -> bytes:
    sha = part["$blob"]
    if not isinstance(sha, str):
        raise InvalidNodeError("an attachment part's $blob must be a git blob id")
    return session.load_blob(sha)
