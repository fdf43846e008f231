"""`sessions export`: a session as Markdown (the chat of one branch, for people), JSONL (every
node of the session in seq order, one JSON object per line, for tools) or HTML (the whole session as
one self-contained report page: docs/report.md)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from ..report import Limits
    from ..store.session import Session


def export(s: Session, head: str | None, fmt: str, limits: Limits | None = None) -> str:
    if fmt == "html":
        from ..report import export_html
        return export_html(s, limits)
    if fmt == "jsonl":
        nodes = sorted(s.graph.nodes.values(), key=lambda c: c.seq)
        return "".join(orjson.dumps(c.to_dict()).decode() + "\n" for c in nodes)
    return markdown(s, head)


def markdown(s: Session, head: str | None) -> str:
    from ..context.views import chat_stream
    from .catalog import TITLE_KEY, first_user_text, one_line
    g = s.graph
    title = g.extra.get(TITLE_KEY) or one_line(first_user_text(g)) or s.id
    out = [f"# {title}", "", f"- session: `{s.id}`", f"- working dir: `{s.info.get('working_dir')}`",
           f"- head: `{head or g.head_id}`", ""]
    for r in chat_stream(s, head):
        who = "User" if r["role"] == "user" else "Assistant"
        status = "" if r["status"] == "completed" else f" ({r['status']})"
        out += [f"## {who}{status}", "", f"<!-- seq {r['seq']} · {r['id']} -->", ""]
        if r["text"]:
            out += [r["text"].rstrip(), ""]
        for c in r.get("calls") or ():
            node = g.nodes[c["id"]]
            args = orjson.dumps(node.input).decode() if node.input is not None else ""
            out.append(f"- tool `{c['name']}`({args[:200]}) → {c['status']}")
        if r.get("calls"):
            out.append("")
        err = g.nodes[r["id"]].metadata.get("error") if r["status"] == "error" else None
        if isinstance(err, dict):
            out += [f"> error: {err.get('type')}: {err.get('message')}", ""]
    return "\n".join(out).rstrip() + "\n"


def write_out(text: str, path: str | None, prog: str) -> int:
    """`text` to stdout, or atomically to `path` (a report is never left half written)."""
    if path is None:
        sys.stdout.write(text)
        return 0
    target = os.path.abspath(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".sessiondag-export-")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)   # a report is for sharing (CI artifacts): the usual file mode
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        print(f"{prog}: cannot write {path}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {path} ({len(text.encode('utf-8'))} bytes)", file=sys.stderr)
    return 0
