"""Spill on write: a node field larger than the threshold is stored once as a separate blob.

This runs on the write path (the store's append, before the record is journaled), deterministically:
the same value always spills to the same blob id with the same preview. The node keeps a reference
`{"$blob": <git blob id>, "size": <bytes>, "media_type": …, "preview": <first PREVIEW_CHARS chars>}`
and `metadata.spilled` lists the spilled fields. Rendering ships the preview plus the reference;
`Session.load_blob` returns the full body.
"""

from __future__ import annotations

from typing import Any, Callable

import orjson

from ..core.model import Call

PREVIEW_CHARS = 2000
SPILLABLE = ("input", "output")


def is_blob_ref(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("$blob"), str)


def _oversized(value: object, threshold: int) -> tuple[bytes, str, str] | None:
    """(bytes, media type, text) of a field value larger than `threshold`, else None."""
    if value is None or is_blob_ref(value):
        return None
    if isinstance(value, str):
        if len(value) * 4 <= threshold:  # UTF-8 takes at most 4 bytes a character: cannot spill
            return None
        data, media, text = value.encode(), "text/plain", value
    else:
        data = orjson.dumps(value)
        media, text = "application/json", data.decode()
    return (data, media, text) if len(data) > threshold else None


def spills(call: Call, threshold: int | None) -> bool:
    """Would `spill_call` store a blob for `call`? True too for a value orjson refuses (the write
    path raises the typed error for it)."""
    try:
        return threshold is not None and any(_oversized(getattr(call, f), threshold) for f in SPILLABLE)
    except TypeError:
        return True


def spill_call(call: Call, put_blob: Callable[[bytes], str], threshold: int | None) -> None:
    """Replace oversized fields of `call` (not yet recorded) by blob references, in place."""
    if threshold is None:
        return
    spilled = []
    for field in SPILLABLE:
        big = _oversized(getattr(call, field), threshold)
        if big is None:
            continue
        data, media, text = big
        sha = put_blob(data)
        setattr(call, field, {"$blob": sha, "size": len(data), "media_type": media,
                              "preview": text[:PREVIEW_CHARS]})
        spilled.append(field)
    if spilled:
        call.metadata = {**call.metadata, "spilled": spilled}


def unspill(value: Any, get_blob: Callable[[str], bytes]) -> Any:
    """The full value behind a (possibly) spilled field."""
    if not is_blob_ref(value):
        return value
    data = get_blob(value["$blob"])
    return data.decode() if value.get("media_type") == "text/plain" else orjson.loads(data)
