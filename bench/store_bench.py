"""Store benchmark: durable append, turn commit, cold open, branch walk, bytes per node, and the same
chat workload on an fsync'd JSONL file, the OpenAI Agents SDK SQLiteSession and LangGraph SqliteSaver.

    python bench/store_bench.py [--quick]

Prints one table; figures are medians unless noted. Compare by ratios: absolute numbers are noisy.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from sessiondag import ROOT, Call
from sessiondag.store import SessionStore

WORDS = ("agent file read write test pass fail error patch diff the a of to in model token call tool "
         "result branch commit session node graph python function return value list dict string json "
         "because then when which where build run check update change line code review plan step").split()


def chat_messages(n: int, seed: int = 7) -> list[dict]:
    """A chat of `n` messages: user turns ~300 bytes, assistant replies ~1,200 bytes of varied words."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        user = i % 2 == 0
        size = rng.randrange(150, 450) if user else rng.randrange(600, 1800)
        words, length = [], 0
        while length < size:
            w = rng.choice(WORDS)
            words.append(w)
            length += len(w) + 1
        out.append({"role": "user" if user else "assistant", "content": f"{i}: " + " ".join(words)})
    return out


def call_of(msg: dict, pred: str) -> Call:
    md = {} if msg["role"] == "user" else {"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 40,
                                          "gen_ai.request.model": "model-x"}
    return Call("user" if msg["role"] == "user" else "llm", "chat", output=msg["content"], predecessor=pred,
                metadata=md)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def du(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            total += os.lstat(os.path.join(root, f)).st_size
    return total


# --- building -----------------------------------------------------------------------------------

def build(state: str, sid: str, n: int, turn: int = 50) -> None:
    """A session of `n` chat nodes through the public API: one append_many (one fsync) and one
    commit per turn of `turn` nodes (an agentic turn with tool calls is often tens of nodes)."""
    store = SessionStore(state)
    store.start_session(sid, working_dir=state)
    s = store.session(sid)
    msgs = chat_messages(1000)
    head = ROOT
    done = 0
    while done < n:
        k = min(turn, n - done)
        batch = []
        for i in range(k):
            c = call_of(msgs[(done + i) % 1000], head)
            head = c.id
            batch.append(c)
        s.append_many(batch)
        s.commit_turn()
        done += k
    store.close()


# --- our measurements ---------------------------------------------------------------------------

def measure_writes(states: dict[int, str], sid: str, appends: int, turns: int) -> dict:
    """Durable append and turn commit on every session size, interleaved (blocks of 50 appends,
    then one turn per size, rotating who goes first) so that all sizes run under the same machine
    conditions. Append: the chat workload's messages; a turn: a user message and a reply."""
    stores = {n: SessionStore(st) for n, st in states.items()}
    sess = {n: stores[n].session(sid) for n in states}
    order = list(states)
    lat: dict[int, list[float]] = {n: [] for n in order}
    msgs = chat_messages(appends)
    for k, b in enumerate(range(0, appends, 50)):
        for n in order[k % len(order):] + order[:k % len(order)]:
            s = sess[n]
            for m in msgs[b:b + 50]:
                c = call_of(m, s.head_id)
                a = time.perf_counter()
                s.append(c)
                lat[n].append(time.perf_counter() - a)
    for s in sess.values():
        s.commit_turn()
    ctimes: dict[int, list[float]] = {n: [] for n in order}
    pair = chat_messages(2)
    for k in range(turns):
        for n in order[k % len(order):] + order[:k % len(order)]:
            s = sess[n]
            for m in pair:
                s.append(call_of(m, s.head_id))
            a = time.perf_counter()
            s.commit_turn()
            ctimes[n].append(time.perf_counter() - a)
    for st in stores.values():
        st.close()
    out = {}
    for n in order:
        xs, cs = lat[n], ctimes[n]
        out[("append", n)] = {"rate": len(xs) / sum(xs), "p50": pct(xs, 50), "p99": pct(xs, 99)}
        out[("commit", n)] = {"p50": pct(cs, 50), "mean": statistics.fmean(cs), "max": max(cs)}
    return out


def measure_open(state: str, sid: str, reps: int) -> tuple[float, float, float]:
    """(best wall, median wall, median CPU) seconds to open a session cold and build its graph."""
    walls, cpus = [], []
    for _ in range(reps):
        gc.collect()
        a, c = time.perf_counter(), time.process_time()
        store = SessionStore(state)
        s = store.session(sid)
        n = len(s.graph.nodes)
        walls.append(time.perf_counter() - a)
        cpus.append(time.process_time() - c)
        assert n > 1
        store.close()
        del s, store
    return min(walls), statistics.median(walls), statistics.median(cpus)


def measure_get_branch(state: str, sid: str, depth: int, reps: int) -> float:
    store = SessionStore(state)
    s = store.session(sid)
    branch = s.get_branch()
    tip = branch[min(depth, len(branch)) - 1].id
    assert len(s.get_branch(tip)) == min(depth, len(branch))
    out = []
    for _ in range(reps):
        a = time.perf_counter()
        s.get_branch(tip)
        out.append(time.perf_counter() - a)
    store.close()
    return pct(out, 50)


class Ours:
    name = "sessiondag append (durable)"

    def __init__(self, root: str, commit_every: int | None = None):
        self.state = os.path.join(root, f"ours-{commit_every}")
        self.store = SessionStore(self.state)
        self.store.start_session("chat", working_dir=root)
        self.s = self.store.session("chat")
        self.head = ROOT
        self.commit_every = commit_every
        self.i = 0
        if commit_every:
            self.name = f"sessiondag append + commit every {commit_every}"

    def step(self, m: dict) -> None:
        c = call_of(m, self.head)
        self.s.append(c)
        self.head = c.id
        self.i += 1
        if self.commit_every and self.i % self.commit_every == 0:
            self.s.commit_turn()

    def finish(self) -> int:
        self.s.commit_turn()
        assert len(self.s.get_branch()) == self.i
        self.store.close()
        return du(self.state)


class Jsonl:
    name = "JSONL + fsync per line"

    def __init__(self, root: str):
        self.path = os.path.join(root, "chat.jsonl")
        self.f = open(self.path, "ab", buffering=0)

    def step(self, m: dict) -> None:
        self.f.write(json.dumps(m).encode() + b"\n")
        os.fsync(self.f.fileno())

    def finish(self) -> int:
        self.f.close()
        return os.path.getsize(self.path)


class AgentsSqlite:
    name = "Agents SDK SQLiteSession.add_items"

    def __init__(self, root: str):
        from agents.memory import SQLiteSession
        self.path = os.path.join(root, "agents.sqlite")
        self.loop = asyncio.new_event_loop()
        self.sess = SQLiteSession("chat", self.path)
        self.n = 0

    def step(self, m: dict) -> None:
        self.loop.run_until_complete(self.sess.add_items([m]))
        self.n += 1

    def finish(self) -> int:
        assert len(self.loop.run_until_complete(self.sess.get_items())) == self.n
        self.sess.close()
        self.loop.close()
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))


class LangGraphSqlite:
    name = "LangGraph SqliteSaver.put"

    def __init__(self, root: str):
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6
        from langgraph.checkpoint.sqlite import SqliteSaver
        self.uuid6 = uuid6
        self.path = os.path.join(root, "langgraph.sqlite")
        self.cm = SqliteSaver.from_conn_string(self.path)
        self.saver = self.cm.__enter__()
        self.config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
        self.cp = empty_checkpoint()
        self.msgs: list[dict] = []

    def step(self, m: dict) -> None:
        # one put per message of the growing chat: the checkpoint holds the whole message list
        self.msgs.append(m)
        i = len(self.msgs)
        self.cp = {**self.cp, "id": str(self.uuid6(clock_seq=i)), "channel_values": {"messages": list(self.msgs)},
                   "channel_versions": {"messages": i}}
        self.config = self.saver.put(self.config, self.cp, {"source": "loop", "step": i}, {"messages": i})

    def finish(self) -> int:
        got = self.saver.get_tuple({"configurable": {"thread_id": "chat", "checkpoint_ns": ""}})
        assert len(got.checkpoint["channel_values"]["messages"]) == len(self.msgs)
        self.cm.__exit__(None, None, None)
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))


def median_run(runs: list[dict]) -> dict:
    """Per system: the median of each figure over the runs; the ratios use per-run pairs."""
    out: dict = {}
    for key in runs[0]:
        vals = [r[key] for r in runs]
        if isinstance(vals[0], str):
            out[key] = vals[0]
            continue
        out[key] = {f: statistics.median(v[f] for v in vals) for f in vals[0]}
    out["_runs"] = runs
    return out


def chat_workload(root: str, n: int, block: int = 50, makers: list | None = None) -> dict[str, dict | str]:
    """The same chat on every system, interleaved in blocks of `block` messages so that all of
    them run under the same (noisy) machine conditions. Rate = messages / time inside the calls.
    `makers`: the systems (callables of the root dir); default: ours, JSONL and the frameworks'."""
    systems: list = []
    out: dict[str, dict | str] = {}
    for make in [lambda m=m: m(root) for m in makers] if makers else (
            lambda: Ours(root), lambda: Ours(root, 2), lambda: Jsonl(root),
            lambda: AgentsSqlite(root), lambda: LangGraphSqlite(root)):
        try:
            systems.append(make())
        except ImportError as e:
            out[getattr(make, "name", repr(e))] = f"not installed ({e})"
    lat: dict[str, list[float]] = {x.name: [] for x in systems}
    msgs = chat_messages(n)
    for k, b in enumerate(range(0, n, block)):
        for x in systems[k % len(systems):] + systems[:k % len(systems)]:  # rotate who goes first
            rec = lat[x.name]
            for m in msgs[b:b + block]:
                a = time.perf_counter()
                x.step(m)
                rec.append(time.perf_counter() - a)
    for x in systems:
        xs = lat[x.name]
        out[x.name] = {"rate": len(xs) / sum(xs), "p50": pct(xs, 50), "p99": pct(xs, 99), "bytes": x.finish()}
    return out


# --- table --------------------------------------------------------------------------------------

def us(x: float) -> str:
    return f"{x * 1e6:,.0f} µs"


def ms(x: float) -> str:
    return f"{x * 1e3:,.1f} ms"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    chat_n = 500 if quick else 2_000
    chat_reps = 1 if quick else 3
    appends = 300 if quick else 1_000
    turns = 20 if quick else 60
    root = tempfile.mkdtemp(prefix="sdbench-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    rows: list[tuple[str, str]] = []
    res: dict = {}
    try:
        print(f"store bench ({'quick' if quick else 'full'}) in {root}", file=sys.stderr, flush=True)
        states = {}
        for n in sizes:
            state = states[n] = os.path.join(root, f"s{n}")
            t = time.perf_counter()
            build(state, "big", n)
            print(f"  built {n:,} nodes in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
            res[("bytes", n)] = du(os.path.join(state, "sessions", "big")) / (n + 1)
        for n in sizes:
            res[("open", n)] = measure_open(states[n], "big", 3)
        res["branch"] = measure_get_branch(states[sizes[0]], "big", 1_000, 200)
        print("  appends and commits, interleaved across sizes", file=sys.stderr, flush=True)
        res.update(measure_writes(states, "big", appends, turns))
        for n in sizes:
            shutil.rmtree(states[n], ignore_errors=True)
        for n in sizes:
            a = res[("append", n)]
            rows.append((f"durable append at {n:>7,} nodes",
                         f"{a['rate']:>8,.0f} nodes/s   p50 {us(a['p50'])}   p99 {us(a['p99'])}"))
        for n in sizes:
            c = res[("commit", n)]
            rows.append((f"turn commit at {n:>7,} nodes",
                         f"p50 {ms(c['p50'])}   mean {ms(c['mean'])}   max {ms(c['max'])}"))
        for n in sizes:
            best, med, cpu = res[("open", n)]
            rows.append((f"cold open of {n:>7,} nodes", f"{ms(med)} (best {ms(best)}, CPU {ms(cpu)})"))
        rows.append(("get_branch, 1,000-deep branch", us(res["branch"])))
        for n in sizes:
            rows.append((f"bytes on disk per node at {n:>7,}", f"{res[('bytes', n)]:,.0f} B"))

        runs = []
        for r in range(chat_reps):
            print(f"  chat workload: {chat_n:,} messages, run {r + 1}/{chat_reps}", file=sys.stderr, flush=True)
            d = os.path.join(root, f"chat{r}")
            os.makedirs(d)
            runs.append(chat_workload(d, chat_n))
            shutil.rmtree(d, ignore_errors=True)
        chat = median_run(runs)
        print()
        w = max(len(r[0]) for r in rows)
        print(f"{'measure':<{w}}  result")
        print(f"{'-' * w}  {'-' * 60}")
        for k, v in rows:
            print(f"{k:<{w}}  {v}")
        print()
        print(f"chat workload, {chat_n:,} messages one at a time (same content on every system; "
              f"user ~300 B, assistant ~1,200 B; median of {chat_reps} interleaved run(s))")
        w2 = max(len(k) for k in chat if not k.startswith("_"))
        print(f"{'system':<{w2}}  {'msgs/s':>9}  {'p50':>9}  {'p99':>9}  {'on disk':>10}")
        for k, v in chat.items():
            if k.startswith("_"):
                continue
            if isinstance(v, str):
                print(f"{k:<{w2}}  {v}")
                continue
            print(f"{k:<{w2}}  {v['rate']:>9,.0f}  {us(v['p50']):>9}  {us(v['p99']):>9}  {v['bytes'] / 1e6:>8.2f} MB")
        ours = chat["sessiondag append (durable)"]["rate"]
        print()
        print("ratios (targets from issue 2)")

        def ratio(name: str, key: str, target: float) -> None:
            v = chat[key]
            if isinstance(v, str):
                print(f"  {name}: n/a ({v})")
                return
            per_run = [run["sessiondag append (durable)"]["rate"] / run[key]["rate"] for run in chat["_runs"]]
            r = statistics.median(per_run)
            runs_txt = f"  [runs: {', '.join(f'{x:.2f}' for x in per_run)}]" if len(per_run) > 1 else ""
            print(f"  {name}: {r:.2f}x  (target >= {target}x) {'OK' if r >= target else 'MISSED'}{runs_txt}")

        ratio("durable append vs fsync'd JSONL", "JSONL + fsync per line", 0.8)
        ratio("durable append vs SQLiteSession", "Agents SDK SQLiteSession.add_items", 2)
        ratio("durable append vs SqliteSaver", "LangGraph SqliteSaver.put", 10)
        lo, hi = sizes[0], sizes[-1]
        r = res[("commit", hi)]["p50"] / res[("commit", lo)]["p50"]
        rm = res[("commit", hi)]["mean"] / res[("commit", lo)]["mean"]
        print(f"  turn commit {hi:,} vs {lo:,}: p50 {r:.2f}x {'OK' if r <= 1.3 else 'MISSED'}, "
              f"mean (incl. pack merges) {rm:.2f}x {'OK' if rm <= 1.3 else 'MISSED'}  (target <= 1.3x)")
        o = res[("open", hi)][1]
        print(f"  cold open of {hi:,} nodes: {ms(o)}  (target < 1 s{' at 100,000' if hi < 100_000 else ''}) "
              f"{'OK' if o < 1 else 'MISSED'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
