"""The HTML assembly: one self-contained file (inline CSS and JS, no external asset, a Content-Security-
Policy that forbids every network fetch) holding the viewer and the data document.

The document goes into `<script type="application/json">` elements, which the browser never runs:
the rows in one, each body chunk in its own (decoded on demand, so a 100k-node report paints from the
rows alone). JSON in them escapes `<`, `>`, `&` and U+2028/9, so no text of the session (a `</script>`
in a tool output) can end the element; the viewer puts every string in the page as text, never as HTML.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import orjson

ASSETS = ("markdown.js", "viewer.js")
CSP_FILE = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
CSP_LIVE = CSP_FILE + "; connect-src 'self'"


def asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(value: Any) -> str:
    s = orjson.dumps(value).decode()
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def page(doc: dict[str, Any] | None, *, title: str, live: dict[str, Any] | None = None) -> str:
    """The HTML page: with `doc` embedded (the file), or with `live` settings for the bridge's data
    source (`{"base": path}`; the document is fetched)."""
    parts = ["<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP_LIVE if live else CSP_FILE}\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>{_esc(title)} — sessiondag</title>", "<style>", asset("viewer.css"), "</style></head><body>",
             asset("body.html")]
    if doc is not None:
        chunks = doc["chunks"]
        head = {k: v for k, v in doc.items() if k != "chunks"}
        head["chunk_count"] = len(chunks)
        parts.append(f"<script type=\"application/json\" id=\"sd-doc\">{json_for_script(head)}</script>")
        for i, ch in enumerate(chunks):
            parts.append(f"<script type=\"application/json\" id=\"sd-chunk-{i}\">{json_for_script(ch)}</script>")
    else:
        parts.append(f"<script type=\"application/json\" id=\"sd-live\">{json_for_script(live or {})}</script>")
    for name in ASSETS:
        parts += ["<script>", asset(name), "</script>"]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def render_html(doc: dict[str, Any]) -> str:
    return page(doc, title=doc["meta"]["title"])
