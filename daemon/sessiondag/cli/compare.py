"""`sessiondag sessions compare ID A B [--format json|markdown]`: two branches (or two calls) side by
side (context/compare.py): JSON as session/compare answers it, or a markdown report — a usage table,
the first divergence, then each turn's model calls and tool calls for A and for B."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import orjson

from ..context.compare import Comparison, Turn, compare
from .usage import cost_text

if TYPE_CHECKING:
    from ..store.session import Session


def _calls(turn: Turn | None) -> list[str]:
    if turn is None:
        return ["_(no such turn)_"]
    out = []
    for c in turn["calls"]:
        out.append(f"- `{c['node_id'][:12]}` {c['model']} ({c['input_tokens']} in / {c['output_tokens']} out, "
                   f"{c['latency_ms']:.0f} ms): {' '.join(c['text'].split())[:300] or '_(no text)_'}")
        for t in c["tool_calls"]:
            res = "not run" if t["result"] is None else " ".join(t["result"].split())[:120]
            out.append(f"  - {t['name']}({orjson.dumps(t['arguments']).decode()[:120]}) → {res}")
    return out or ["_(no model call)_"]


def markdown(r: Comparison) -> str:
    a, b = r["a"], r["b"]
    lines = [f"# Compare `{a['head_id'][:12]}` (A) and `{b['head_id'][:12]}` (B)", "",
             "| | A | B |", "|---|---|---|"]
    lines.append(f"| nodes | {a['nodes']} | {b['nodes']} |")
    for f in ("calls", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
        lines.append(f"| {f} | {a['usage'][f]} | {b['usage'][f]} |")
    lines.append(f"| latency | {a['usage']['latency_ms'] / 1000:.2f} s | {b['usage']['latency_ms'] / 1000:.2f} s |")
    lines.append(f"| cost | {cost_text(a['usage'])} | {cost_text(b['usage'])} |")
    lines += ["", f"Shared prefix: {r['shared']} nodes."]
    d = r["first_divergence"]
    lines.append("No divergence." if d is None else
                 f"First divergence: turn {d['turn']}, model call {d['call']}: {d['why']} "
                 f"(A `{(d['a'] or '-')[:12]}`, B `{(d['b'] or '-')[:12]}`).")
    for row in r["turns"]:
        side = row["a"] or row["b"]   # each aligned turn is on one side at least
        user = side["user"] if side is not None else ""
        lines += ["", f"## Turn {row['index']}: {' '.join(user.split())[:200]}", "", "**A**", ""]
        lines += _calls(row["a"])
        lines += ["", "**B**", ""]
        lines += _calls(row["b"])
    return "\n".join(lines) + "\n"


def compare_cmd(s: Session, a: str, b: str, fmt: str) -> int:
    with s.lock:
        r = compare(s, a, b)
    if fmt == "json":
        sys.stdout.write(orjson.dumps(r, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(markdown(r))
    return 0
