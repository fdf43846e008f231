"""`/restore`: the daemon's session/restore as a slash command (ACP has no word for putting the
files back, let alone to just before one tool call).

    /restore <nodeId> [before] [files|conversation|both] [dry-run] [force]
    /restore undo [force]

`nodeId` is a turn's head id or any node's id — a tool call's `toolCallId` is its node id, so
`/restore <toolCallId> before` puts the files back as they were just before that call ran. Words
may be written with or without a leading `--`. Answered as agent text: what changed (or would),
what a `before` could not know (tool calls whose effects are not recorded), and how to undo."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .agent_api import AgentApi
from .errors import invalid
from .turns import SessionState

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

HINT = "<nodeId> [before] [files|conversation|both] [dry-run] [force], or: undo"
WHATS = ("files", "conversation", "both")
FLAGS = {"before": "before", "dry-run": "dry_run", "dry_run": "dry_run", "force": "force", "undo": "undo"}


def parse(sid: str, arg: str) -> dict[str, str | bool]:
    """The session/restore params of `/restore <arg>`."""
    p: dict[str, str | bool] = {"session_id": sid}
    for word in arg.split():
        w = word.lstrip("-")
        if w in FLAGS:
            p[FLAGS[w]] = True
        elif w in WHATS:
            if "what" in p:
                raise invalid(f"/restore: one of {', '.join(WHATS)}, not both {p['what']} and {w}", field="prompt")
            p["what"] = w
        elif "node_id" not in p and not word.startswith("-"):
            p["node_id"] = word
        else:
            raise invalid(f"/restore: unknown word {word!r} (usage: /restore {HINT})", field="prompt")
    if "node_id" not in p and not p.get("undo"):
        raise invalid(f"/restore needs a node id or undo (usage: /restore {HINT})", field="prompt")
    if p.get("undo") and "node_id" in p:
        raise invalid("/restore undo takes no node id", field="prompt")
    return p


async def run(agent: AgentApi, st: SessionState, arg: str) -> str:
    p = parse(st.sid, arg)
    if st.fork is not None and p.get("what") in ("conversation", "both"):
        raise invalid("a fork follows its own branch: restore the conversation in the session it was forked "
                      "from", field="prompt")
    return describe(p, await agent.call("session/restore", p))


def describe(p: Mapping[str, str | bool], r: wp.SessionRestoreResult) -> str:
    dry = bool(r.get("dry_run"))
    lines = []
    files = r.get("files")
    if files is not None:
        where = "the newest undo point" if p.get("undo") else \
            f"just before {p['node_id']}" if p.get("before") else p.get("node_id")
        lines.append(f"{'dry run: would restore' if dry else 'restored'} the files to {where} "
                     f"(snapshot {files['target']})")
        lines += [f"  {c['change']} {c['path']}" + (f" ({c['why']})" if c.get("why") else "")
                  for c in files.get("changes") or ()] or ["  no file changes"]
        before = files.get("before")
        unknown = (before.get("unknown") if before else None) or ()
        if unknown:
            lines.append("not recorded, so as the turn's start left them: what tool calls "
                         + ", ".join(unknown) + " changed")
        if files.get("undo") and not dry:
            lines.append("undo with: /restore undo")
    if r.get("what") in ("conversation", "both"):
        lines.append(f"{'would continue' if dry else 'continuing'} the conversation from {r['head_id']}"
                     " (the next prompt forks there)")
    return "\n".join(lines)
