"""Sync against the git CLI, side by side in one run (docs/sync.md):

- push of a 10,000-node session to a git daemon on 127.0.0.1, first time and after one more turn,
  by `sessiondag sync` (dulwich) and by `git push` of the same repository;
- pull: a first clone into an empty state dir vs `git fetch` into an empty bare repo, then the
  incremental pull of one more turn vs `git fetch`;
- `sync list` of a remote holding 1,000 sessions (their refs and summaries).

Bytes are the packs the receiving side stored (receive.unpackLimit / fetch.unpackLimit 1, so git
keeps its packs too). Goals: ≤ 1.5× the CLI's time, ≤ 1.1× its bytes; list ≤ 1 s.
`python bench/sync_bench.py [--quick]` (--quick: 2,000 nodes, 200 sessions).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import orjson

from sessiondag import ROOT, Call
from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore
from sessiondag.sync import listing, pull, push, remotes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _git_daemon(base: str) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
                             f"--base-path={base}", "--export-all", "--enable=receive-pack", base],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("git daemon did not start") from None
            time.sleep(0.02)


def _bare(path: str) -> str:
    subprocess.run(["git", "init", "-q", "--bare", path], check=True)
    for k in ("receive.unpackLimit", "fetch.unpackLimit", "transfer.unpackLimit"):
        subprocess.run(["git", "-C", path, "config", k, "1"], check=True)
    return path


def _packs(git_dir: str) -> int:
    d = os.path.join(git_dir, "objects", "pack")
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".pack")) if os.path.isdir(d) else 0


def _build(store: SessionStore, sid: str, wd: str, nodes: int) -> None:
    store.open_session(sid, working_dir=wd)
    s = store.session(sid)
    head, made, per_turn = ROOT, 0, 100
    text = "the quick brown fox jumps over the lazy dog " * 10
    while made < nodes:
        calls = []
        for i in range(min(per_turn, nodes - made) // 2):
            u = Call("user", "alice", output=f"question {made + 2 * i}: {text}", predecessor=head)
            a = Call("llm", "model-x", output=f"answer {made + 2 * i}: {text}", caller=u.id, predecessor=u.id)
            calls += [u, a]
            head = a.id
        s.append_many(calls)
        s.commit_turn()
        made += len(calls)


def _one_more_turn(store: SessionStore, sid: str) -> None:
    s = store.session(sid)
    u = s.append(Call("user", "alice", output="one more question", predecessor=s.head_id))
    s.append(Call("llm", "model-x", output="one more answer", caller=u.id, predecessor=u.id))
    s.commit_turn()


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _row(name: str, ours: tuple[float, int], cli: tuple[float, int]) -> str:
    return (f"{name:<34} {ours[0] * 1000:9.1f} ms {ours[1]:>10} B | git {cli[0] * 1000:9.1f} ms {cli[1]:>10} B | "
            f"x{ours[0] / cli[0]:.2f} time, x{ours[1] / max(cli[1], 1):.2f} bytes")


def main(flags: list[str]) -> None:
    quick = "--quick" in flags
    nodes, sessions = (2000, 200) if quick else (10000, 1000)
    tmp = tempfile.mkdtemp(prefix="sync-bench-")
    srv = os.path.join(tmp, "srv")
    os.makedirs(srv)
    proc, port = _git_daemon(srv)
    try:
        wd = os.path.join(tmp, "wd")
        os.makedirs(wd)
        a = SessionStore(os.path.join(tmp, "a"))
        _build(a, "big", wd, nodes)
        git_dir = os.path.join(a.path_of("big"), "git")
        ours_remote, cli_remote = _bare(os.path.join(srv, "ours.git")), _bare(os.path.join(srv, "cli.git"))
        r = remotes.resolve(a.state_dir, f"git://127.0.0.1:{port}/ours.git")
        cli_url = f"git://127.0.0.1:{port}/cli.git"
        settings = Settings()
        push.push(a, r, "big", settings, dry_run=True)   # warm both sides' caches alike: one ls-remote each
        subprocess.run(["git", "ls-remote", cli_url], capture_output=True, check=True)
        push.record_identity(a.session("big"))          # recorded before, so both push the same history
        print(f"session of {nodes} nodes; machine loaded by other work: compare ratios within this run")

        def cli_push() -> None:
            subprocess.run(["git", "-C", git_dir, "push", "-q", cli_url, "refs/heads/main:refs/sessiondag/big/main"],
                           check=True, capture_output=True)
        for label in ("push, first time", "push, one more turn"):
            if label != "push, first time":
                _one_more_turn(a, "big")
            before_o, before_c = _packs(ours_remote), _packs(cli_remote)
            t_o, _ = _timed(lambda: push.push(a, r, "big", settings))
            t_c, _ = _timed(cli_push)
            print(_row(label, (t_o, _packs(ours_remote) - before_o), (t_c, _packs(cli_remote) - before_c)))

        b = SessionStore(os.path.join(tmp, "b"))
        fetch_repo = _bare(os.path.join(tmp, "fetched.git"))

        def cli_fetch() -> None:
            subprocess.run(["git", "-C", fetch_repo, "fetch", "-q", cli_url,
                            "refs/sessiondag/big/main:refs/sessiondag/big/main"], check=True, capture_output=True)
        t_o, _ = _timed(lambda: pull.clone(b, r, "big", working_dir=wd))
        bytes_o = _packs(os.path.join(b.path_of("big"), "git"))
        t_c, _ = _timed(cli_fetch)
        print(_row("pull, first time (clone)", (t_o, bytes_o), (t_c, _packs(fetch_repo))))
        _one_more_turn(a, "big")
        push.push(a, r, "big", settings)
        cli_push()
        before_c = _packs(fetch_repo)
        t_o, res = _timed(lambda: pull.pull(b, r, "big"))
        t_c, _ = _timed(cli_fetch)
        print(_row("pull, one more turn", (t_o, res.get("bytes", 0)), (t_c, _packs(fetch_repo) - before_c)))

        # a remote with many sessions: their refs and summaries (one real history shared by all)
        head = subprocess.run(["git", "-C", ours_remote, "rev-parse", "refs/sessiondag/big/main"],
                              capture_output=True, text=True, check=True).stdout.strip()
        blobs = "\n".join(orjson.dumps({"session_id": f"s-{i:05d}", "title": f"session {i}", "last_activity": 1.0 + i,
                                        "commit": head, "turn": 1, "nodes": 3}).decode() for i in range(sessions))
        shas = subprocess.run(["git", "-C", ours_remote, "hash-object", "-w", "--stdin-paths"],
                              input="\n".join(_write_each(tmp, blobs.splitlines())), capture_output=True,
                              text=True, check=True).stdout.split()
        lines = "".join(f"update refs/sessiondag/s-{i:05d}/main {head}\nupdate refs/sessiondag/s-{i:05d}/summary {sha}\n"
                        for i, sha in enumerate(shas))
        subprocess.run(["git", "-C", ours_remote, "update-ref", "--stdin"], input=lines, text=True, check=True)
        t, rows = _timed(lambda: listing.list_remote(r))
        print(f"{'sync list, ' + str(len(rows)) + ' sessions':<34} {t * 1000:9.1f} ms (goal: <= 1000 ms)")
        a.close()
        b.close()
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _write_each(tmp: str, docs: list[str]) -> list[str]:
    d = os.path.join(tmp, "summaries")
    os.makedirs(d, exist_ok=True)
    paths = []
    for i, doc in enumerate(docs):
        p = os.path.join(d, f"{i}.json")
        with open(p, "w") as f:
            f.write(doc)
        paths.append(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
