"""Framework adapters bench: the chat workload of store_bench through sessiondag's adapters side by
side with each framework's own SQLite store, in one run.

    python bench/frameworks_bench.py [--quick] [--n N]

Systems (same messages, one at a time, interleaved in blocks so all run under the same machine load):
- Agents SDK: `SQLiteSession.add_items([msg])` vs `SessiondagSession.add_items([msg])`
- LangGraph: `SqliteSaver.put` vs `SessiondagSaver.put` of the growing chat (one checkpoint per
  message, the checkpoint holds the whole message list, as a MessagesState graph's would)
Our adapters run with their default (a git commit every 32 writes; every write is fdatasync'd in
the journal before it returns) and with a git commit after every write.
Every store is created before the timed calls, as SQLiteSession's constructor creates its tables:
our session or thread by its adapter's own API (`SessiondagSession.session`, `session_for(...,
create=True)`), SqliteSaver's tables by its `setup()`; the rows compare the calls, not a
one-time creation (ours: a directory, a git repository and a journal laid out durably, tens of ms
under load; a first call would otherwise carry it into every row's mean).
A floor runs beside them: one pwrite + fdatasync per call and nothing else (`Floor`), the most any
adapter that makes each call durable by itself can reach against each store.
Rate = messages / time inside the calls; p50 / p99 per call; CPU per call (process time, user +
system, every thread: our worker's, the SDK's executor's) — on a loaded machine wall time mostly
measures the disk queue and the scheduler, CPU what a call itself costs; bytes on disk after the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_bench import AgentsSqlite, LangGraphSqlite, chat_workload, du, us  # noqa: E402  (the shared workload)


class AgentsOurs(AgentsSqlite):
    name = "sessiondag SessiondagSession.add_items"

    def __init__(self, root: str, commit_every: int = 32):
        from sessiondag.integrations.agents import SessiondagSession
        self.path = os.path.join(root, f"agents-sessiondag-{commit_every}")
        self.loop = asyncio.new_event_loop()
        self.sess = SessiondagSession("chat", self.path, commit_every=commit_every)
        assert self.sess.session.head_id  # created now, before the timed calls (see the module doc)
        self.n = 0
        if commit_every != 32:
            self.name = f"sessiondag SessiondagSession.add_items, commit every {commit_every}"

    def finish(self) -> int:
        assert len(self.loop.run_until_complete(self.sess.get_items())) == self.n
        self.sess.close()
        self.loop.close()
        return du(self.path)


class LangGraphOurs(LangGraphSqlite):
    name = "sessiondag SessiondagSaver.put"

    def __init__(self, root: str, commit_every: int = 32):
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6

        from sessiondag.integrations.langgraph import SessiondagSaver
        self.uuid6 = uuid6
        self.path = os.path.join(root, f"langgraph-sessiondag-{commit_every}")
        self.saver = SessiondagSaver(self.path, commit_every=commit_every)
        self.saver.session_for("chat", create=True)  # created now, before the timed calls (module doc)
        self.config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
        self.cp = empty_checkpoint()
        self.msgs: list[dict] = []
        if commit_every != 32:
            self.name = f"sessiondag SessiondagSaver.put, commit every {commit_every}"

    def finish(self) -> int:
        got = self.saver.get_tuple({"configurable": {"thread_id": "chat", "checkpoint_ns": ""}})
        assert got.checkpoint["channel_values"]["messages"] == self.msgs
        self.saver.commit()
        self.saver.close()
        return du(self.path)


class LangGraphSqliteReady(LangGraphSqlite):
    """SqliteSaver with its tables created before the timed calls (they are made lazily, by the
    first put, otherwise), as the other stores here are."""

    def __init__(self, root: str):
        super().__init__(root)
        self.saver.setup()


class Floor:
    """The floor of an adapter that makes each call durable by itself: the message's JSON line
    `pwrite` into a zero-preallocated file, then one `fdatasync` (what our journal does, without
    anything else: no thread hop, no graph, no checks). A ratio against it bounds what any such
    adapter can reach against the same store: e.g. SQLiteSession.add_items / this."""
    name = "floor: pwrite + fdatasync per call"
    file, size = "floor.log", 16 << 20  # bytes zeroed (and fsync'd) before the first call, as the journal preallocates

    def __init__(self, root: str):
        self.fd = os.open(os.path.join(root, self.file), os.O_RDWR | os.O_CREAT, 0o600)
        os.pwrite(self.fd, bytes(self.size), 0)
        os.fsync(self.fd)
        self.at = 0

    def line(self, m: dict) -> bytes:
        return json.dumps(m).encode() + b"\n"

    def step(self, m: dict) -> None:
        line = self.line(m)
        os.pwrite(self.fd, line, self.at)
        os.fdatasync(self.fd)
        self.at += len(line)

    def finish(self) -> int:
        os.close(self.fd)
        return self.at


def cpu_timed(make, made: list) -> object:
    """`make`, whose system also sums the CPU time of its calls (process time: every thread)."""
    def maker(root: str) -> object:
        x = make(root)
        step, x.cpu = x.step, 0.0

        def timed(m: dict) -> None:
            c = time.process_time()
            step(m)
            x.cpu += time.process_time() - c
        x.step = timed
        made.append(x)
        return x
    return maker


def workload(root: str, n: int) -> dict[str, dict]:
    made: list = []
    res = chat_workload(root, n, makers=[cpu_timed(m, made) for m in (
        AgentsSqlite, AgentsOurs, lambda r: AgentsOurs(r, 1), LangGraphSqliteReady, LangGraphOurs,
        lambda r: LangGraphOurs(r, 1), Floor)])
    for x in made:
        res[x.name]["cpu"] = x.cpu / n
    return res


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = 300 if "--quick" in argv else 2_000
    if "--n" in argv:
        n = int(argv[argv.index("--n") + 1])
    root = tempfile.mkdtemp(prefix="sdfwbench-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    try:
        print(f"frameworks bench: {n:,} messages in {root}", file=sys.stderr, flush=True)
        res = workload(root, n)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(f"chat workload through the framework adapters, {n:,} messages one at a time "
          f"(user ~300 B, assistant ~1,200 B; interleaved blocks of 50)")
    w = max(len(k) for k in res)
    print(f"{'system':<{w}}  {'msgs/s':>9}  {'p50':>9}  {'p99':>9}  {'CPU/call':>9}  {'on disk':>11}")
    for k, v in res.items():
        print(f"{k:<{w}}  {v['rate']:>9,.0f}  {us(v['p50']):>9}  {us(v['p99']):>9}  {us(v['cpu']):>9}  "
              f"{v['bytes'] / 1e6:>9.2f} MB")
    print()
    print("ratios (sessiondag adapter / the framework's SQLite store)")
    pairs = [("Agents SDK", "sessiondag SessiondagSession.add_items", "Agents SDK SQLiteSession.add_items"),
             ("Agents SDK, commit every call", "sessiondag SessiondagSession.add_items, commit every 1",
              "Agents SDK SQLiteSession.add_items"),
             ("LangGraph", "sessiondag SessiondagSaver.put", "LangGraph SqliteSaver.put"),
             ("LangGraph, commit every put", "sessiondag SessiondagSaver.put, commit every 1", "LangGraph SqliteSaver.put"),
             ("floor vs Agents SDK", Floor.name, "Agents SDK SQLiteSession.add_items"),
             ("floor vs LangGraph", Floor.name, "LangGraph SqliteSaver.put")]
    for label, ours, theirs in pairs:
        o, t = res[ours], res[theirs]
        print(f"  {label:<30} throughput {o['rate'] / t['rate']:>6.2f}x   p99 {o['p99'] / t['p99']:>6.2f}x   "
              f"CPU per call (theirs / ours) {t['cpu'] / o['cpu']:>6.2f}x   bytes on disk {o['bytes'] / t['bytes']:>7.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
