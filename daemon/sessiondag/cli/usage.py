"""`sessiondag sessions usage ID [--by branch|node|subagent|model|turn] [--head NODE] [--json]`:
the usage ledger (context/ledger.py) as a table, or its rows as JSON objects.

A cost shows as dollars when every call in the row has a price, `unknown` when none has, and
`$X+?` when some have (X: what the priced ones cost; the rest have no price, docs/usage.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import orjson

from ..context.ledger import BY, session_total, session_usage

if TYPE_CHECKING:
    from ..context.ledger import Usage, UsageRow, UsageTotals
    from ..store.session import Session

SHORT = 12


def cost_text(t: UsageTotals) -> str:
    if t["cost_usd"] is not None:
        return f"${t['cost_usd']:.4f}"
    if not t["priced_cost_usd"] and t["unpriced_calls"] == t["calls"]:
        return "unknown"
    return f"${t['priced_cost_usd']:.4f}+?"


def _label(by: str, r: UsageRow) -> str:
    key = r["key"]
    if by == "branch":
        return (r["head_id"] or "(detached)")[:SHORT] + (f" {r['name']}" if r.get("name") else "")
    if by == "subagent":
        return "(main agent)" if key is None else key[:SHORT] + (f" {r['name']}" if r.get("name") else "")
    if by == "turn":
        return "(before the first turn)" if key is None else f"#{r['seq']} {key[:SHORT]}"
    if by == "node":
        return f"{(r['node_id'] or '')[:SHORT]} {r['model']}"  # its key (a node row's id: never null)
    return str(key)


def table(result: Usage) -> list[str]:
    by = result["by"]
    head = (by.upper(), "CALLS", "INPUT", "CACHED", "OUTPUT", "REASONING", "LATENCY", "COST")

    def line(label: str, t: UsageTotals) -> tuple[str, ...]:
        return (label, str(t["calls"]), str(t["input_tokens"]), str(t["cached_tokens"]), str(t["output_tokens"]),
                str(t["reasoning_tokens"]), f"{t['latency_ms'] / 1000:.1f}s", cost_text(t))
    cols = [head] + [line(_label(by, r), r) for r in result["rows"]] + [line("TOTAL", result["total"])]
    widths = [max(len(c[i]) for c in cols) for i in range(len(head))]
    return ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(c, widths))).rstrip()
            for c in cols]


def usage(s: Session, by: str, head: str | None, json_mode: bool) -> int:
    if by not in BY:
        raise ValueError(f"--by is one of {', '.join(BY)}")
    with s.lock:
        result = session_usage(s, by, head)
    if json_mode:
        sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    for ln in table(result):
        print(ln)
    return 0


def session_cost(s: Session) -> str:
    """The cost column of `sessions list`: the session's total in one pass (no ledger built)."""
    with s.lock:
        return cost_text(session_total(s))
