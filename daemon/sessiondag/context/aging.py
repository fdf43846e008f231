"""Tool-result aging and render manifests.

The aging boundary (`aged_before_seq`, session meta) only advances, and only when a turn commits —
never mid-turn, so the rendered prefix stays byte-stable within a turn. Code-node results with
seq < the boundary render truncated. `advance_aging` is a store commit hook (store/session.py
`CommitHook`): the store runs it under the session lock inside `commit_turn` once it is installed
(`store.add_commit_hook(advance_aging)`); the runtime's `session_context` and the daemon install it.
A bare `SessionStore` does not advance the boundary (its next commit through a hooked store does).

A render manifest pins everything a render depends on besides the graph itself, so a past call can
be re-rendered byte for byte after more turns and policy changes:
    {policy_version, aged_before_seq, max_result_chars, expose_default, summary, last_seq,
     spilled: [node ids rendered from a spill preview], head_id, frame}
`current_manifest(session)` gives today's; `render_context` fills `spilled`, `head_id` and `frame`.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import SessionDagError
from ..core.graph import Graph
from ..core.model import ROOT
from ..core.settings import Settings
from ..store.session import Session
from ..store.write_policy import recorded as recorded_write_policy
from . import policy

AGED_KEY = "aged_before_seq"
SUMMARY_KEY = "active_summary"
MANIFEST_REQUIRED = ("policy_version", "aged_before_seq", "max_result_chars", "expose_default",
                     "summary", "last_seq")


# A render manifest: the policy keys check_manifest checks (MANIFEST_REQUIRED), what the render sets
# (head_id, frame, spilled) and what the runtime adds to a model call's (instructions, prompt …);
# recorded in the call's metadata, so its values are core/model.py's (`Any`), read back checked.
Manifest = dict[str, Any]


class ManifestError(SessionDagError, ValueError):
    code = "invalid_manifest"


def aging_boundary(graph: Graph, tail: int) -> int:
    """The seq of the first of the last `tail` user turns on HEAD's chain (0 if there are fewer)."""
    turns: list[int] = []
    nodes = graph.nodes
    cur = nodes.get(graph.head_id)
    while cur is not None and cur.id != ROOT:
        if cur.role == "user" and (cur.caller == ROOT or cur.is_spawn_root):
            turns.append(cur.seq)
            if len(turns) > tail:
                return turns[tail - 1]
        p = cur.predecessor
        if p is None or p == ROOT:
            break
        nxt = nodes.get(p)
        cur = nxt if nxt is not None and nxt.seq < cur.seq else None  # edges point to older nodes
    return 0


def advance_aging(graph: Graph) -> dict[str, int]:
    """The commit hook: session-meta updates to record with this turn's commit ({} = none). Pure; the
    tail is the session's recorded `tool_aging_tail_turns` (its write policy, which the store records
    before any hook runs: store/write_policy.py), never this process's own setting."""
    written = recorded_write_policy(graph.extra)
    tail = written["tool_aging_tail_turns"] if written else Settings().tool_aging_tail_turns
    if tail == 0:
        candidate = graph.last_seq + 1
    else:
        candidate = aging_boundary(graph, tail)
    old = graph.extra.get(AGED_KEY, 0)
    if not isinstance(old, int):
        old = 0
    if candidate > old:
        return {AGED_KEY: candidate}
    return {}


def current_manifest(session: Session) -> Manifest:
    """Today's render manifest for `session` (its settings read now: `session.settings()`)."""
    settings = session.settings()
    g = session.graph
    aged = g.extra.get(AGED_KEY, 0) if settings.tool_aging else 0
    return {
        "policy_version": policy.POLICY_VERSION,
        "aged_before_seq": aged if isinstance(aged, int) else 0,
        "max_result_chars": settings.tool_aging_max_result_chars,
        "expose_default": settings.expose_default,
        "summary": g.extra.get(SUMMARY_KEY),
        "last_seq": g.last_seq,
        "spilled": [],
    }


def check_manifest(m: object) -> Manifest:
    if not isinstance(m, dict):
        raise ManifestError("a render manifest must be an object")
    missing = [k for k in MANIFEST_REQUIRED if k not in m]
    if missing:
        raise ManifestError(f"render manifest lacks {missing}")
    if m["policy_version"] != policy.POLICY_VERSION:
        raise ManifestError(f"render manifest policy_version {m['policy_version']!r} is not "
                            f"{policy.POLICY_VERSION} (this build cannot replay it exactly)")
    for k in ("aged_before_seq", "max_result_chars", "last_seq"):
        if not isinstance(m[k], int) or isinstance(m[k], bool) or m[k] < 0:
            raise ManifestError(f"render manifest {k} must be a non-negative integer")
    if m["expose_default"] not in policy.EXPOSE_VALUES:
        raise ManifestError(f"render manifest expose_default {m['expose_default']!r} is unknown")
    if m["summary"] is not None and not isinstance(m["summary"], str):
        raise ManifestError("render manifest summary must be a node id or null")
    return m


def age_text(text: str, max_chars: int) -> str:
    """An aged tool result: the first `max_chars` characters plus a marker of what was cut."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[… {len(text) - max_chars} more characters aged out of context]"
