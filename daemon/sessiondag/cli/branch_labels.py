"""What tells branches apart, for `sessions branches` and the chat's `/branches`: the branch's name
if it has one; else its first user message after the point where it leaves the line it forked
from — or, for a retry (the same message again after that line's turn failed), "retry of turn N"
and why that turn failed; and the divergence point as a turn number (the numbering `sessions log`
shows).

Works on chains of node dicts (Call.to_dict() or session/get_branch nodes), so the CLI (reading
the store) and the chat (through the daemon) label alike."""

from __future__ import annotations

from typing import Any


def _one_line(text: Any, n: int = 60) -> str:
    s = text if isinstance(text, str) else str(text)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def is_turn(n: dict[str, Any]) -> bool:
    """A user message that starts a turn (not a sub-agent's task, not the system prompt)."""
    return n["role"] == "user" and n.get("caller") == "ROOT" and bool(n.get("predecessor"))


def user_turns(chain: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in chain if is_turn(n)]


def _failure(main: list[dict[str, Any]], turn: dict[str, Any]) -> str | None:
    """How the main line's turn starting at `turn` ended, when it failed: 'error: …' / 'cancelled'."""
    i = next(k for k, n in enumerate(main) if n["id"] == turn["id"])
    end = next((k for k in range(i + 1, len(main)) if is_turn(main[k])), len(main))
    last = main[end - 1]
    if last["status"] == "cancelled":
        return "cancelled"
    if last["status"] == "error":
        err = (last.get("metadata") or {}).get("error") or {}
        return "error: " + _one_line(err.get("message") or err.get("type") or "", 50) if err else "error"
    return None


def _parent(chain: list[dict[str, Any]], others: list[list[dict[str, Any]]],
            main_head: str | None) -> tuple[int, list[dict[str, Any]]]:
    """The line this branch left: among the other branches, the one it shares the longest start
    with where it is the newer of the two at the fork (the older child is the line that was
    there) or the other is the main line (a retry that worked took the main line from the failed
    try); the main line wins a tie. Returns (length of the shared start, that line); (0, []) when
    there is none."""
    best: tuple[int, list[dict[str, Any]]] = (0, [])
    for other in others:
        k = 0
        while k < len(chain) and k < len(other) and chain[k]["id"] == other[k]["id"]:
            k += 1
        is_main = bool(other) and other[-1]["id"] == main_head
        if (k < len(chain) and k < len(other) and (chain[k]["seq"] > other[k]["seq"] or is_main)
                and (k > best[0] or (k == best[0] and (is_main or not best[1])))):
            best = (k, other)
    return best


def label_all(branches: list[dict[str, Any]], chains: dict[str, list[dict[str, Any]]]) -> None:
    """Add {label, from_turn} to each branch row (session/list_branches' shape) that has a chain."""
    main_head = next((b["head_id"] for b in branches if b["main"]), None)
    for b in branches:
        if b["head_id"] in chains:
            others = [ch for h, ch in chains.items() if h != b["head_id"]]
            b.update(describe(chains[b["head_id"]], others, name=b["name"], is_main=b["main"], main_head=main_head))


def where(from_turn: int | None) -> str:
    """Where a branch leaves the line it forked from, as `sessions branches` and `/branches` say it."""
    if from_turn is None:
        return ""
    return "from the start" if from_turn == 0 else f"from turn {from_turn}"


def describe(chain: list[dict[str, Any]], others: list[list[dict[str, Any]]], *, name: str | None = None,
             is_main: bool = False, main_head: str | None = None) -> dict[str, Any]:
    """{label, from_turn}: from_turn is the last turn shared with the line it left (None for main)."""
    if is_main:
        return {"label": name or "main", "from_turn": None}
    k, parent = _parent(chain, others, main_head)
    shared = len(user_turns(chain[:k]))
    mine = user_turns(chain[k:])
    if name:
        return {"label": name, "from_turn": shared}
    if not mine:
        return {"label": _one_line(chain[-1].get("output") or chain[-1]["name"]), "from_turn": shared}
    first = mine[0]
    theirs = user_turns(parent)
    if len(theirs) > shared and theirs[shared].get("output") == first.get("output"):
        mine_failed, why = _failure(chain, first), _failure(parent, theirs[shared])
        if mine_failed and not why:
            return {"label": f"failed try of turn {shared + 1} ({mine_failed})", "from_turn": shared}
        return {"label": f"retry of turn {shared + 1}" + (f" ({why})" if why else ""), "from_turn": shared}
    return {"label": _one_line(first.get("output")), "from_turn": shared}
