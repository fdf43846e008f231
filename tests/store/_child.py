"""Child process for the crash and concurrency tests (run as a script: `python _child.py MODE …`)."""

import hashlib
import os
import random
import sys

from sessiondag import Call, ROOT
from sessiondag.store import SessionStore


def crash(state: str, sid: str, seed: int) -> None:
    """Append (and sometimes update, spill, commit) forever; print each acknowledged id."""
    rng = random.Random(seed)
    s = SessionStore(state).session(sid)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    i = 0
    while True:
        i += 1
        head = s.head_id
        role = "user" if i % 2 else "llm"
        body = "x" * (3000 if rng.random() < 0.05 else rng.randrange(10, 300))
        md = {"gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 1} if role == "llm" else {}
        c = s.append(Call(role, "m", output=body, predecessor=head, metadata=md))
        out.write(c.id + "\n")
        out.flush()
        r = rng.random()
        if r < 0.1:
            t = s.append(Call("code", "tool", caller=c.id, status="running"))
            out.write(t.id + "\n")
            out.flush()
            s.update(t.id, output="ok", status="completed")
        elif r < 0.35:
            s.commit_turn()


def writer(state: str, sid: str, n: int, tag: str) -> None:
    """Append n nodes (commit every 50), report, wait for 'go' on stdin, report the final view."""
    s = SessionStore(state).session(sid)
    mine, foreign_seen = [], 0
    last = 0
    for i in range(n):
        head = s.head_id
        c = s.append(Call("user" if i % 2 else "llm", tag, output=f"{tag}-{i}", predecessor=head))
        if c.seq != last + 1 and last:
            foreign_seen += 1
        last = c.seq
        mine.append(c.id)
        if i % 50 == 49:
            s.commit_turn(f"{tag} turn {i // 50}")
    s.commit_turn()
    print("done", len(mine), foreign_seen, flush=True)
    assert sys.stdin.readline().strip() == "go"
    g = s.graph
    ids = sorted(g.nodes)
    print("final", len(ids), hashlib.sha256("".join(ids).encode()).hexdigest(), g.last_seq, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "crash":
        crash(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "writer":
        writer(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        raise SystemExit(f"unknown mode {mode}")
