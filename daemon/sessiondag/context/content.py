"""Node content → wire content parts (OpenAI chat / Anthropic messages).

Stored content shapes a node field may hold (see docs/rendering.md):
- a string (text), None (nothing);
- a list of parts: strings, `{"type": "text", "text": …}`, and attachment references
  `{"type": "image"|"file", "$blob": <sha>, "media_type": …, "name": …, "size": …}` (attachments.py);
- a spill reference `{"$blob", "size", "media_type", "preview"}` (store/spill.py): renders as its preview
  plus a pointer to the full body;
- a dict with a "content" (or "text") key, e.g. an llm reply record: its content renders;
- any other JSON value: rendered as canonical JSON text (sorted keys).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Callable

import orjson

from ..core.errors import SessionDagError
from .graphinfo import RenderError

TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/yaml", "application/x-yaml")


def canonical_json(value: object) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError as e:
        raise RenderError(f"content is not JSON-serializable: {e}") from None


def spill_text(ref: Mapping[str, object]) -> str:
    return (f"{ref.get('preview', '')}\n[… preview only: the full {ref.get('size')} bytes are stored as "
            f"blob {ref['$blob']}]")


def parts_of(value: object) -> list[dict[str, Any]]:
    """Normalize a stored field to a list of text / attachment parts (attachments not loaded)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}] if value else []
    if isinstance(value, list):
        out: list[dict[str, Any]] = []
        for item in value:
            if isinstance(item, str):
                if item:
                    out.append({"type": "text", "text": item})
            elif isinstance(item, dict) and item.get("type") == "text":
                t = item.get("text")
                if not isinstance(t, str):
                    raise RenderError("a text part needs a string 'text'")
                if t:
                    out.append({"type": "text", "text": t})
            elif isinstance(item, dict) and item.get("type") in ("image", "file"):
                if not isinstance(item.get("$blob"), str) or not isinstance(item.get("media_type"), str):
                    raise RenderError(f"an {item.get('type')} part needs '$blob' and 'media_type'")
                out.append(item)
            else:
                out.append({"type": "text", "text": canonical_json(item)})
        return out
    if isinstance(value, dict):
        if isinstance(value.get("$blob"), str) and "type" not in value:
            return [{"type": "text", "text": spill_text(value)}]
        if "content" in value:
            return parts_of(value["content"])
        if isinstance(value.get("text"), str) and "type" not in value:
            return parts_of(value["text"])
        if value.get("type") in ("text", "image", "file"):
            return parts_of([value])
    return [{"type": "text", "text": canonical_json(value)}]


def text_of(parts: list[dict[str, Any]]) -> str:
    """Flatten parts to text (attachments become a one-line note)."""
    out = []
    for p in parts:
        if p["type"] == "text":
            out.append(p["text"])
        else:
            out.append(f"[{p['type']} {p.get('name', '')!s} ({p['media_type']}, {p.get('size', '?')} bytes)]")
    return "\n".join(out)


def _b64(load: Callable[[str], bytes], sha: str) -> str:
    try:
        data = load(sha)
    except (KeyError, SessionDagError) as e:
        raise RenderError(f"attachment blob {sha} is missing from the store: {e}") from None
    return base64.b64encode(data).decode()


def _load_text(load: Callable[[str], bytes], p: dict[str, Any]) -> str:
    try:
        body = load(p["$blob"]).decode()
    except (KeyError, SessionDagError) as e:
        raise RenderError(f"attachment blob {p['$blob']} is missing from the store: {e}") from None
    except UnicodeDecodeError:
        raise RenderError(f"attachment {p.get('name')!r} claims {p['media_type']} but is not UTF-8") from None
    return f"<file name={p.get('name', '')!r} media_type={p['media_type']!r}>\n{body}\n</file>"


def wire_parts(parts: list[dict[str, Any]], fmt: str, load: Callable[[str], bytes] | None) -> list[dict[str, Any]]:
    """Parts → provider content blocks, loading attachment bodies by reference."""
    out = []
    for p in parts:
        t = p["type"]
        if t == "text":
            out.append({"type": "text", "text": p["text"]})
            continue
        if load is None:
            raise RenderError("rendering an attachment needs the session (pass session=…)")
        mt = p["media_type"]
        if t == "image":
            data = _b64(load, p["$blob"])
            if fmt == "openai":
                out.append({"type": "image_url", "image_url": {"url": f"data:{mt};base64,{data}"}})
            else:
                out.append({"type": "image", "source": {"type": "base64", "media_type": mt, "data": data}})
        elif mt.startswith(TEXT_MEDIA):
            out.append({"type": "text", "text": _load_text(load, p)})
        elif mt == "application/pdf":
            data = _b64(load, p["$blob"])
            if fmt == "openai":
                out.append({"type": "file", "file": {"filename": p.get("name", "file.pdf"),
                                                     "file_data": f"data:{mt};base64,{data}"}})
            else:
                out.append({"type": "document", "source": {"type": "base64", "media_type": mt, "data": data}})
        else:
            out.append({"type": "text", "text": text_of([p]) + " (binary attachment; not sent)"})
    return out
