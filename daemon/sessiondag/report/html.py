"""The HTML assembly: one self-contained file (inline CSS and JS, no external asset, a Content-Security-
Policy that forbids every network fetch) holding the viewer and the data document.

The document goes into `<script type="application/json">` elements, which the browser never runs:
the rows in one, each body chunk in its own (decoded on demand, so a 100k-node report paints from the
rows alone). The chunks the first screen needs (HEAD's) come before the viewer's script, the others
after it: the viewer paints while the browser is still parsing them. JSON in them escapes `<`, `>`, `&` and U+2028/9, so no text of the session (a `</script>`
in a tool output) can end the element; the viewer puts every string in the page as text, never as HTML.
"""

from __future__ import annotations

from importlib import resources
from typing import cast

import orjson

from .document import F_HEAD
from .page_types import Document

ASSETS = ("markdown.js", "viewer.js")
LIVE_ASSETS = ("markdown.js", "live.js", "viewer.js")    # live.js: the bridge's data source and patches
CSP_FILE = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
CSP_LIVE = CSP_FILE + "; connect-src 'self'"


def asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(value: object) -> str:
    s = orjson.dumps(value).decode()
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def page(doc: Document | None, *, title: str, live: dict[str, str] | None = None) -> str:
    """The HTML page: with `doc` embedded (the file), or with `live` settings for the bridge's data
    source (`{"base": path}`; the document is fetched)."""
    parts = ["<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP_LIVE if live else CSP_FILE}\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>{_esc(title)} — sessiondag</title>", "<style>", asset("viewer.css"), "</style></head><body>",
             asset("body.html")]
    rest: list[str] = []
    if doc is not None:
        chunks = doc["chunks"]
        head: dict[str, object] = {k: v for k, v in doc.items() if k != "chunks"}
        head["chunk_count"] = len(chunks)
        parts.append(f"<script type=\"application/json\" id=\"sd-doc\">{json_for_script(head)}</script>")
        first = _first_chunks(doc)
        for i in sorted(range(len(chunks)), key=lambda i: (i not in first, i)):
            el = f"<script type=\"application/json\" id=\"sd-chunk-{i}\">{json_for_script(chunks[i])}</script>"
            (parts if i in first else rest).append(el)
    else:
        parts.append(f"<script type=\"application/json\" id=\"sd-live\">{json_for_script(live or {})}</script>")
    for name in (LIVE_ASSETS if live else ASSETS):
        parts += ["<script>", asset(name), "</script>"]
    parts += rest            # after the viewer: it paints while the browser still parses these
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _first_chunks(doc: Document) -> set[int]:
    """The chunks the first screen shows: the one holding HEAD's row and the one before it."""
    flags, size = cast("list[int]", doc["rows"]["flags"]), doc["chunk_size"]   # the flags column: ints
    head = next((r for r in range(len(flags) - 1, -1, -1) if flags[r] & F_HEAD), len(flags) - 1)
    k = max(0, head) // size
    return {k, max(0, k - 1)}


def render_html(doc: Document) -> str:
    return page(doc, title=doc["meta"]["title"])
