"""A real session with every kind of thing a report shows, made by the real CLI (subprocesses on a
temporary state dir and working dir, the scripted provider): tool calls that write files, an
ask_user question and its answer, a granted and a refused permission, an HTML-hostile and non-ASCII
message, a spilled tool input and a spilled tool output, a sub-agent, a cancelled turn, an error
turn, a retry (a fork)
with a branch name, and a compaction summary (written through the library API, as `session/compact`
does)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]
HOSTILE = "<script>window.pwned=1</script>"
UNICODE = "Grüße — ünïcödé ✓ 日本語 <img src=x onerror=window.pwned=2>"
FAKE_KEY = "sk-test" + "A1b2C3d4E5f6G7h8I9j0K1l2"
BIG_MARK = "END-OF-BIG-FILE"

SCRIPT = {"model": "scripted-1", "replies": [
    {"match": "build the thing", "text": "I'll **write** a file:\n\n```python\ndef hello():\n    return 'hi'  # greet\n```",
     "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.py", "content": "print('hi')\n"}}],
     "usage": {"input_tokens": 1200, "output_tokens": 40}},
    {"text": "Which colour do you want?", "tool_calls": [{"name": "ask_user", "arguments": {
        "question": "Which color?", "options": ["red", "blue"]}}]},
    {"text": "Printing something hostile.", "tool_calls": [{"name": "run_command", "arguments": {
        "command": f"printf '%s\\n' '{HOSTILE}' '{FAKE_KEY}'"}}]},
    {"text": "A big file.", "tool_calls": [{"name": "write_file", "arguments": {
        "path": "big.txt", "content": "x" * 40000 + BIG_MARK + "\n"}}]},
    {"text": "A big output.", "tool_calls": [{"name": "run_command", "arguments": {
        "command": "python3 -c \"print('y' * 100000)\""}}]},
    {"text": "Delegating.", "tool_calls": [{"name": "spawn_agent", "arguments": {"task": "count to three",
                                                                             "name": "counter"}}]},
    {"match": "count to three", "text": "one two three"},
    {"match": "follow-up turn", "text": UNICODE},
    {"match": "finished", "text": "Noted the sub-agent's result."},
]}
FAILING = [{"match": "now fail", "text": "Trying to clean up.", "tool_calls": [{"name": "run_command", "arguments": {
               "command": "rm -rf ./nothing"}}]},
           {"match": "rm -rf", "text": "partial answer", "error": "provider exploded"}]
RETRY = [{"text": "retried fine"}]


def sd(args, *, home: Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, SESSIONDAG_HOME=str(home), XDG_CONFIG_HOME=str(home.parent / "config"))
    for k in ("SESSIONDAG_PROVIDER", "SESSIONDAG_SCRIPT", "SESSIONDAG_MODEL"):
        env.pop(k, None)
    p = subprocess.run(CLI + [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    if check and p.returncode != 0:
        raise AssertionError(f"sessiondag {args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def first_turn(tmp: Path, answer: str = "hello", task: str = "warm up") -> tuple[Path, Path, str]:
    """(state dir, working dir, session id) of a new session of one scripted turn, run in-process."""
    home, wd = tmp / "state", tmp / "work"
    home.mkdir()
    wd.mkdir()
    script = tmp / "first.json"
    script.write_text(json.dumps([{"text": answer}]))
    out = sd(["run", "--state-dir", home, "--in-process", "--provider", "scripted", "--script", script, "--json",
              task], home=home, cwd=wd)
    return home, wd, json.loads(out.stdout)["session_id"]


def make_rich_session(tmp: Path) -> tuple[Path, Path, str]:
    """(state dir, working dir, session id) of the session described above."""
    home, wd = tmp / "state", tmp / "work"
    home.mkdir()
    wd.mkdir()
    script, failing, retry = tmp / "script.json", tmp / "failing.json", tmp / "retry.json"
    script.write_text(json.dumps(SCRIPT))
    failing.write_text(json.dumps(FAILING))
    retry.write_text(json.dumps(RETRY))
    answers = tmp / "answers.json"
    answers.write_text(json.dumps({"Which color?": "blue"}))
    base = ["--state-dir", home]
    out = sd(["run", *base, "--in-process", "--provider", "scripted", "--script", script, "--answers", answers,
              "--allow", "write,run", "--json", "build the thing"], home=home, cwd=wd)
    sid = json.loads(out.stdout)["session_id"]
    cancel_a_turn(home, wd, sid, tmp / "hang.json")
    failed = sd(["run", *base, "--in-process", "--session", sid, "--script", failing, "now fail"],
                home=home, cwd=wd, check=False)
    assert failed.returncode == 1, failed.stderr
    sd(["run", *base, "--in-process", "--session", sid, "--script", retry, "--retry"], home=home, cwd=wd)
    compact_first_turn(home, sid)
    branches = json.loads(sd(["sessions", "branches", *base, sid, "--json"], home=home, cwd=wd).stdout)
    current = next(b for b in branches if b["current"])
    sd(["sessions", "name", *base, sid, "--branch", current["head_id"], "retry-branch"], home=home, cwd=wd)
    return home, wd, sid


def cancel_a_turn(home: Path, wd: Path, sid: str, script: Path) -> None:
    """A turn whose model call hangs, cancelled by SIGINT once its text has streamed (exit 130, the
    turn committed `cancelled`)."""
    script.write_text(json.dumps([{"text": "thinking slowly", "hang": True}]))
    env = dict(os.environ, SESSIONDAG_HOME=str(home), XDG_CONFIG_HOME=str(home.parent / "config"))
    p = subprocess.Popen(CLI + ["run", "--state-dir", str(home), "--in-process", "--session", sid, "--script",
                                str(script), "a slow task"], cwd=wd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    seen, deadline = b"", time.monotonic() + 120
    while b"thinking slowly" not in seen:           # the streamed text: the call is under way
        assert time.monotonic() < deadline and p.poll() is None, seen.decode(errors="replace")
        if select.select([p.stderr], [], [], 1)[0]:
            seen += os.read(p.stderr.fileno(), 4096)
    p.send_signal(signal.SIGINT)
    assert p.wait(120) == 128 + signal.SIGINT
    p.stderr.close()


def compact_first_turn(home: Path, sid: str) -> None:
    """A summary standing for the first turn's opening (its user message and first model call with
    that call's tool call), appended and committed through the library API."""
    from sessiondag.context.aging import advance_aging
    from sessiondag.context.compaction import compact
    from sessiondag.store import SessionStore
    store = SessionStore(home, commit_hooks=(advance_aging,))
    try:
        s = store.session(sid)
        with s.lock:
            chain = [c for c in s.get_branch(s.head_id) if not c.name.startswith("context/")]
            ids = [c.id for c in chain[:3]]   # user, llm, its write_file call
            compact(s, ids, "The user asked to **build the thing**; hello.py was written.")
            s.commit_turn("compact")
    finally:
        store.close()


def synthetic_session(home: Path, turns: int, *, fork_every: int = 25, batch: int = 500) -> str:
    """A session of `turns` turns of four nodes each (user, model call, tool call, model call), with a
    fork every `fork_every` turns, written through the library API in batches; its id."""
    from sessiondag.core.model import Call
    from sessiondag.store import SessionStore
    store = SessionStore(home)
    try:
        h = store.open_session(None, working_dir=str(home))
        s = store.session(h.id)
        prev, pending, tips = "ROOT", [], []
        for t in range(turns):
            if fork_every and t and t % fork_every == 0 and len(tips) > 3:
                prev = tips[-3]                     # a retry of two turns back: a fork
            u = Call("user", "user", output=f"turn {t}: please do step {t} of the plan", predecessor=prev)
            md = {"gen_ai.request.model": "m-1", "provider": "bench", "gen_ai.usage.input_tokens": 100 + t,
                  "gen_ai.usage.output_tokens": 20, "sessiondag.latency_ms": 12.5}
            a = Call("llm", "m-1", output=f"Looking at **step {t}**.\n\n```python\nx = {t}\n```", caller=u.id,
                     predecessor=u.id, metadata=md)
            k = Call("code", "read_file", input={"path": f"f{t}.txt"}, output=f"contents of file {t}\n" * 3,
                     caller=a.id, predecessor=a.id, metadata={"tool_call_id": f"call_{t}"})
            b = Call("llm", "m-1", output=f"Done with step {t}.", caller=u.id, predecessor=k.id, metadata=dict(md))
            pending += [u, a, k, b]
            prev = b.id
            tips.append(b.id)
            if len(pending) >= batch:
                s.append_many(pending)
                pending = []
        if pending:
            s.append_many(pending)
        s.commit_turn("synthetic")
        return h.id
    finally:
        store.close()


VOLATILE = ("exported_at", "version")


def comparable(head: dict, chunks: list) -> dict:
    """A live document (its head and chunks) as a fresh build's, the fields that differ anyway left out."""
    doc = orjson.loads(orjson.dumps(head))
    for k in VOLATILE:
        doc["meta"].pop(k, None)
    doc.pop("version", None)
    doc.pop("chunk_count", None)
    doc["chunks"] = orjson.loads(orjson.dumps(chunks))
    return doc


def fresh(home: Path, sid: str) -> dict:
    """The live document a build of the session on disk gives now (comparable)."""
    from sessiondag.report import Limits
    from sessiondag.report.document import build
    from sessiondag.store import SessionStore
    store = SessionStore(home)
    try:
        doc = build(store.session(sid), Limits(), live=True)
        chunks = doc.pop("chunks")
        return comparable(doc, chunks)
    finally:
        store.close()
