"""`sessions export`: a session as Markdown (the chat of one branch, for people) or JSONL (every
node of the session in seq order, one JSON object per line, for tools)."""

from __future__ import annotations

from typing import Any

import orjson


def export(s: Any, head: str | None, fmt: str) -> str:
    if fmt == "jsonl":
        nodes = sorted(s.graph.nodes.values(), key=lambda c: c.seq)
        return "".join(orjson.dumps(c.to_dict()).decode() + "\n" for c in nodes)
    return markdown(s, head)


def markdown(s: Any, head: str | None) -> str:
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
