"""Usage ledger benchmark (context/ledger.py): the roll-up of a 100k-node session with 1,000
sub-agents.

The session is built through the real store (batched appends): each unit is a user turn whose
model call spawns a sub-agent (a spawn branch of 45 model calls with tool calls), then calls a
function with two inner model calls, then gets the sub-agent's follow-up turn — about 100 nodes a
unit. Columns (ms, medians; the machine is shared):
  cold      build the ledger from the loaded graph (one pass; what the first session/usage pays)
  list      the session total alone in one pass (the cost column of `sessions list`; no ledger)
  warm      session/usage's roll-up with the ledger built, per `by`
  +1 turn   append one more turn (user + model call with usage: the listener applies it), then
            the roll-up by model — the query only (the append is the store's write path)

    python bench/usage_bench.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from sessiondag import Call
from sessiondag.context.ledger import BY, drop_ledger, ledger_for, session_usage, usage_total
from sessiondag.store import SessionStore


def md(k: int) -> dict:
    return {"gen_ai.usage.input_tokens": 1000 + k % 97, "gen_ai.usage.output_tokens": 50 + k % 13,
            "provider": "openai", "gen_ai.request.model": ("gpt-4o", "gpt-4o-mini")[k % 2],
            "sessiondag.cost": {"usd": 1e-6, "pusd": 1_000_000 + k}}


def unit(s, k: int) -> None:
    u = s.append(Call("user", "u", output=f"task {k}", predecessor=s.head_id))
    a = s.append(Call("llm", "m", output="", caller=u.id, predecessor=u.id, metadata=md(k)))
    t = s.append(Call("code", "spawn_agent", input={"task": "x"}, caller=a.id, predecessor=a.id, output="ok"))
    root = s.spawn_branch(t.id, source="task", name=f"sub-{k}", content="do x")
    tip = root
    for j in range(45):
        b = s.append(Call("llm", "m", output="", caller=root, predecessor=tip, metadata=md(k + j)))
        tip = s.append(Call("code", "grep", caller=b.id, predecessor=b.id, output="hit")).id
    f = s.append(Call("code", "summarize", caller=t.id, predecessor=None))
    s.append(Call("llm", "m", output="s", caller=f.id, predecessor=None, metadata=md(k + 1)))
    s.append(Call("llm", "m", output="s", caller=f.id, predecessor=None, metadata=md(k + 2)))
    c = s.append(Call("llm", "m", output="done", caller=u.id, predecessor=t.id, metadata=md(k + 3)))
    fu = s.append(Call("user", "task", output="finished", predecessor=c.id))
    s.append(Call("llm", "m", output="noted", caller=fu.id, predecessor=fu.id, metadata=md(k + 4)))


def _median_ms(fn, n: int) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    target = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(d)
        s = store.session(store.open_session(None, working_dir=None).id)
        k = 0
        t0 = time.perf_counter()
        with s.lock, s.batched():
            while k < target // 100:
                unit(s, k)
                k += 1
        s.commit_turn()
        build_s = time.perf_counter() - t0
        n = len(s.graph.nodes)
        subs = len(s.graph.spawn_heads)
        print(f"session: {n} nodes, {subs} sub-agents, {sum(c.role == 'llm' for c in s.graph.nodes.values())} "
              f"model calls (built in {build_s:.1f} s)")
        with s.lock:
            def cold():
                drop_ledger(s)
                ledger_for(s)
            print(f"cold build          {_median_ms(cold, 3):8.2f} ms")
            drop_ledger(s)
            print(f"list total (1 pass) {_median_ms(lambda: usage_total(s.graph), 3):8.2f} ms  "
                  "(sessions list's cost column: no ledger built)")
            for by in BY:
                print(f"warm by {by:<10}  {_median_ms(lambda: session_usage(s, by), 5):8.2f} ms")
            led = ledger_for(s)
            print(f"warm total only     {_median_ms(led.totals, 5):8.3f} ms")
            incr = []
            for j in range(5):
                u = s.append(Call("user", "u", output=f"more {j}", predecessor=s.head_id))
                s.append(Call("llm", "m", output="", caller=u.id, predecessor=u.id, metadata=md(j)))
                t = time.perf_counter()
                session_usage(s, "model")
                incr.append((time.perf_counter() - t) * 1000)
            assert ledger_for(s) is led  # kept up by the events, not rebuilt
            print(f"+1 turn, by model   {statistics.median(incr):8.3f} ms")
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
