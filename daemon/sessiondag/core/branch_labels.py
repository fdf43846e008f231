"""What tells branches apart, for `sessions branches`, `session/list_branches` (and through it the
chat's `/branches`, VS Code and Neovim): the branch's name if it has one; else its first user
message after the point where it leaves the line it forked from — or, for a retry (the same message
again after that line's turn failed), "retry of turn N" and why that turn failed, and for the try
that a retry replaced as the main line (core/main_line.py), "failed try of turn N (…)"; and the
divergence point as a turn number (the numbering `sessions log` shows).

Works on chains of nodes (Graph.get_branch), so the CLI (reading the store) and the daemon label
alike. Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from .branch_row import BranchRow
from .model import ROOT, Call


class BranchLabel(TypedDict):
    label: str
    from_turn: int | None   # the last turn shared with the line it left; None for the main line


def _one_line(text: object, n: int = 60) -> str:
    s = text if isinstance(text, str) else str(text)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def is_turn(n: Call) -> bool:
    """A user message that starts a turn (not a sub-agent's task, not the system prompt)."""
    return n.role == "user" and n.caller == ROOT and bool(n.predecessor)


def user_turns(chain: list[Call]) -> list[Call]:
    return [n for n in chain if is_turn(n)]


def _failure(main: list[Call], turn: Call) -> str | None:
    """How the turn of `main` starting at `turn` ended, when it failed: 'error: …' / 'cancelled'."""
    i = next(k for k, n in enumerate(main) if n.id == turn.id)
    end = next((k for k in range(i + 1, len(main)) if is_turn(main[k])), len(main))
    last = main[end - 1]
    if last.status == "cancelled":
        return "cancelled"
    if last.status == "error":
        err = last.metadata.get("error") or {}
        return "error: " + _one_line(err.get("message") or err.get("type") or "", 50) if err else "error"
    return None


def _parent(chain: list[Call], others: list[list[Call]], main_head: str | None) -> tuple[int, list[Call]]:
    """The line this branch left: among the other branches, the one it shares the longest start
    with where it is the newer of the two at the fork (the older child is the line that was
    there) or the other is the main line (a retry that worked took the main line from the failed
    try); the main line wins a tie. Returns (length of the shared start, that line); (0, []) when
    there is none."""
    best: tuple[int, list[Call]] = (0, [])
    for other in others:
        k = 0
        while k < len(chain) and k < len(other) and chain[k].id == other[k].id:
            k += 1
        is_main = bool(other) and other[-1].id == main_head
        if (k < len(chain) and k < len(other) and (chain[k].seq > other[k].seq or is_main)
                and (k > best[0] or (k == best[0] and (is_main or not best[1])))):
            best = (k, other)
    return best


def label_all(branches: list[BranchRow], chain_of: Callable[[str], list[Call]]) -> None:
    """Add {label, from_turn, turns} to each branch row (session/list_branches' shape). A
    sub-agent's branch is labelled by its name (else "sub-agent"), with no turns of its own."""
    chains = {b["head_id"]: chain_of(b["head_id"]) for b in branches if not b["spawn_root"]}
    main_head = next((b["head_id"] for b in branches if b["main"]), None)
    for b in branches:
        chain = chains.get(b["head_id"])
        if chain is None:
            b["label"], b["from_turn"], b["turns"] = b["name"] or "sub-agent", None, 0
            continue
        others = [ch for h, ch in chains.items() if h != b["head_id"]]
        d = describe(chain, others, name=b["name"], is_main=b["main"], main_head=main_head)
        b["label"], b["from_turn"], b["turns"] = d["label"], d["from_turn"], len(user_turns(chain))


def where(from_turn: int | None) -> str:
    """Where a branch leaves the line it forked from, as `sessions branches` and `/branches` say it."""
    if from_turn is None:
        return ""
    return "from the start" if from_turn == 0 else f"from turn {from_turn}"


def describe(chain: list[Call], others: list[list[Call]], *, name: str | None = None,
             is_main: bool = False, main_head: str | None = None) -> BranchLabel:
    """{label, from_turn}: from_turn is the last turn shared with the line it left (None for main)."""
    if is_main:
        return {"label": name or "main", "from_turn": None}
    k, parent = _parent(chain, others, main_head)
    shared = len(user_turns(chain[:k]))
    mine = user_turns(chain[k:])
    if name:
        return {"label": name, "from_turn": shared}
    if not mine:
        return {"label": _one_line(chain[-1].output or chain[-1].name), "from_turn": shared}
    first = mine[0]
    theirs = user_turns(parent)
    if len(theirs) > shared and theirs[shared].output == first.output:
        mine_failed, why = _failure(chain, first), _failure(parent, theirs[shared])
        if mine_failed and not why:
            return {"label": f"failed try of turn {shared + 1} ({mine_failed})", "from_turn": shared}
        return {"label": f"retry of turn {shared + 1}" + (f" ({why})" if why else ""), "from_turn": shared}
    return {"label": _one_line(first.output), "from_turn": shared}
