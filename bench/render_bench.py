"""Render benchmark: render_context + render_dag_messages on one long branch.

The branch is built through the real store: each turn is user → llm (2 tool calls, one of them an
agentic function with an inner llm call and a nested function) → llm, 8 nodes a turn, a git commit
every 50 turns. Columns:
  cold     first render after the caches are dropped (what a freshly started daemon pays);
           best = the fastest of 5 (the machine is shared: medians are noisy)
  warm     the same head again (everything cached)
  +1 turn  one more turn appended and committed, then render its head (the per-call cost)
  in-frame one more inner call inside a running agentic function at the tip, then the render
           of that function's frame (render_context(frame=…) + messages)
All times are medians in ms; `KB` is the size of the shipped messages (orjson). What "+1 turn"
costs beyond the new turn itself is copying the lists it returns (nodes, messages): C-speed work
proportional to what ships; the history is not re-rendered (tests/context/test_cache.py checks the
history's message objects are reused).

    python bench/render_bench.py [--quick] [--format openai|anthropic]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

import orjson

from sessiondag import Call
from sessiondag.context import cache as cache_mod
from sessiondag.context.messages import render_dag_messages
from sessiondag.context.render import render_context
from sessiondag.context.system_prompt import build_system_prompt, record_system_prompt
from sessiondag.store import SessionStore

NODES_PER_TURN = 8


def add_turn(s, k: int) -> None:
    u = s.append(Call("user", "alice", output=f"question {k}: " + "lorem ipsum " * 8, predecessor=s.head_id))
    l1 = s.append(Call("llm", "model-x", output=f"let me check {k}", caller=u.id, predecessor=u.id,
                       metadata={"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}))
    t = s.append(Call("code", "grep", input={"pattern": f"p{k}"}, output="match line\n" * 20,
                      caller=l1.id, predecessor=l1.id, metadata={"tool_call_id": f"call_{k}_a"}))
    f = s.append(Call("code", "summarize", input={"path": f"f{k}.py"}, caller=l1.id, predecessor=None,
                      status="running", metadata={"tool_call_id": f"call_{k}_b"}))
    s.append(Call("llm", "model-x", input="summarize this file", output="it does things", caller=f.id))
    g = s.append(Call("code", "count", input={"n": k}, caller=f.id, output=k))
    s.append(Call("llm", "model-x", input="count", output=str(k), caller=g.id))
    s.update(f.id, output="a summary of the file", status="completed")
    s.append(Call("llm", "model-x", output=f"answer {k} " * 10, caller=u.id, predecessor=t.id))


def render(s, fmt: str):
    rc = render_context(s)
    return rc, render_dag_messages(rc, fmt, session=s)


def timed(fn, repeat: int, best: bool = False) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return (min(times) if best else statistics.median(times)), out


def bench_size(n_nodes: int, fmt: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(d)
        s = store.session(store.open_session(None, working_dir=None).id)
        t0 = time.perf_counter()
        record_system_prompt(s, build_system_prompt(identity="You are a careful engineer.",
                                                    tools=[{"name": "grep", "description": "search",
                                                            "parameters": {"type": "object"}}]))
        turns = max(1, n_nodes // NODES_PER_TURN)
        for k in range(turns):
            add_turn(s, k)
            if k % 50 == 49:
                s.commit_turn()
        s.commit_turn()
        build_s = time.perf_counter() - t0

        def cold():
            cache_mod.drop_cache(s)
            return render(s, fmt)

        cold_ms, _ = timed(cold, 5)
        cold_best, _ = timed(cold, 5, best=True)
        render(s, fmt)
        warm_ms, (rc, msgs) = timed(lambda: render(s, fmt), 5)
        spine = len(s.get_branch())
        nbytes = len(orjson.dumps(msgs))
        more = []
        for k in range(5):
            add_turn(s, turns + k)
            s.commit_turn()
            ms, _ = timed(lambda: render(s, fmt), 1)
            more.append(ms)
        # inside a running function at the tip: one inner call appended, then the in-frame render
        u = s.append(Call("user", "alice", output="go", predecessor=s.head_id))
        l1 = s.append(Call("llm", "model-x", output="calling", caller=u.id, predecessor=u.id))
        f = s.append(Call("code", "agent", input={}, caller=l1.id, predecessor=l1.id, status="running",
                          metadata={"tool_call_id": "frame"}))
        render(s, fmt)
        in_frame = []
        for k in range(5):
            s.append(Call("llm", "model-x", input=f"step {k}", output="ok", caller=f.id))
            ms, _ = timed(lambda: render_dag_messages(render_context(s, frame=f.id), fmt, session=s), 1)
            in_frame.append(ms)
        row = {"frame": statistics.median(in_frame), "nodes": len(s.graph.nodes) - 1, "spine": spine, "rendered": len(rc.nodes),
               "msgs": len(msgs), "KB": nbytes // 1024, "build_s": build_s, "cold": cold_ms, "cold_best": cold_best,
               "warm": warm_ms, "turn": statistics.median(more)}
        store.close()
        return row


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    fmt = "anthropic" if "--format=anthropic" in argv or "anthropic" in argv else "openai"
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    print(f"render_context + render_dag_messages ({fmt}); times in ms (median; best = fastest cold of 5)")
    head = f"{'nodes':>8} {'spine':>7} {'rendered':>8} {'msgs':>7} {'KB':>7} {'build s':>8} " \
           f"{'cold':>8} {'best':>8} {'warm':>8} {'+1 turn':>8} {'in-frame':>8}"
    print(head)
    print("-" * len(head))
    for n in sizes:
        r = bench_size(n, fmt)
        print(f"{r['nodes']:>8} {r['spine']:>7} {r['rendered']:>8} {r['msgs']:>7} {r['KB']:>7} "
              f"{r['build_s']:>8.1f} {r['cold']:>8.2f} {r['cold_best']:>8.2f} {r['warm']:>8.2f} {r['turn']:>8.2f} {r['frame']:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
