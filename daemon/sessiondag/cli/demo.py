"""`sessiondag demo`: the main job end to end — an agent driven against a workspace.

On a temporary state dir (or $SESSIONDAG_HOME / --state-dir when given, which are kept) and a fresh
temporary workspace (removed at the end), the scripted provider (offline,
deterministic) drives four turns through the same agent loop the daemon and `sessiondag run` use:
a tool call that reads the workspace, a write that needs permission, a retry of that turn (a fork),
and a sub-agent on a spawn branch whose result comes back as a follow-up turn at HEAD. Then it
prints the session id, the branch tree and the git log of the session.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from ..core.settings_source import current as current_settings
from ..runtime import Runtime, allow_policy, make_provider, retry_point, run_turn, session_context
from ..context.store_factory import open_store
from ..store import SessionStore
from ..store.session import Session

SCRIPT = [
    {"match": "Look around", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
    {"match": "notes.txt", "text": "The workspace holds notes.txt (a to-do list)."},
    {"match": "Summarize the notes", "tool_calls": [
        {"name": "write_file", "arguments": {"path": "SUMMARY.md", "content": "# Summary\n\nThree open to-dos.\n"}}]},
    {"match": "wrote", "text": "Wrote SUMMARY.md.", "repeat": True},
    {"match": "Summarize the notes in one line", "tool_calls": [
        {"name": "write_file", "arguments": {"path": "SUMMARY.md", "content": "Three open to-dos.\n"}}]},
    {"match": "second opinion", "tool_calls": [
        {"name": "spawn_agent", "arguments": {"task": "Proofread SUMMARY.md", "name": "proofreader"}}]},
    {"match": "Proofread SUMMARY.md", "tool_calls": [{"name": "read_file", "arguments": {"path": "SUMMARY.md"}}]},
    {"match": "Three open to-dos", "text": "No typos in SUMMARY.md."},
    {"match": "spawned sub-agent", "text": "A proofreader is on it; its report will follow."},
    {"match": "finished: completed", "text": "The proofreader found no typos. Done."},
]


def _print_tree(s: Session) -> None:
    for b in s.list_branches():
        flags = ",".join(f for f, on in (("main", b.main), ("HEAD", b.current)) if on)
        label = b.name or ("spawn branch" if b.spawn_root else "")
        print(f"  {b.head_id} [{flags or '-'}] {label}")
        for c in s.get_branch(b.head_id):
            text = c.output if isinstance(c.output, str) else (c.name if c.role == "code" else str(c.output))
            text = " ".join(str(text).split())[:70]
            print(f"      {c.seq:>3} {c.role:<4} {c.name:<14} {c.status:<9} {text}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="sessiondag demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME or $XDG_STATE_HOME/sessiondag)")
    args = ap.parse_args(argv)
    settings = current_settings()
    state_dir = args.state_dir or (settings.state_dir if settings.source("state_dir").kind != "default" else None)
    temp_state = None if state_dir else tempfile.mkdtemp(prefix="sessiondag-demo-state-")
    workspace = tempfile.mkdtemp(prefix="sessiondag-demo-")
    try:
        return _demo(open_store(state_dir or temp_state), workspace, keep=temp_state is None)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        if temp_state is not None:
            shutil.rmtree(temp_state, ignore_errors=True)


def _demo(store: SessionStore, workspace: str, *, keep: bool) -> int:
    with open(os.path.join(workspace, "notes.txt"), "w") as f:
        f.write("- renew the certificate\n- answer the review\n- book the room\n")
    events = []
    rt = Runtime(make_provider({"provider": "scripted", "script": SCRIPT}), permissions=allow_policy({"write"}),
                 on_event=lambda kind, data: events.append(kind), config=store.settings())
    print(f"state dir: {store.state_dir}\nworkspace: {workspace}")
    with session_context(None, working_dir=workspace, store=store, runtime=rt) as h:
        print(f"session:   {h.session_id}\n")
        for prompt in ("Look around the workspace.", "Summarize the notes."):
            r = run_turn(prompt)
            print(f"turn: {prompt!r} → {r.stop_reason}: {r.text}")
        # retry the second turn with a different prompt: an ordinary fork from its predecessor
        assert r.user_node_id is not None  # a turn that ran recorded its user message
        r = run_turn("Summarize the notes in one line.", branch_from=retry_point(h.session, r.user_node_id))
        print(f"retry: → {r.stop_reason}: {r.text}")
        h.session.name_branch(h.session.head_id, "one-line-summary")
        r = run_turn("Get a second opinion on the summary.")
        print(f"turn: sub-agent → {r.stop_reason}: {r.text}")
    rt.wait_subagents(timeout=60)
    s = store.session(h.session_id)
    print(f"\nbranch tree ({len(events)} progress events streamed):")
    _print_tree(s)
    handle = store.handle(s)
    print(f"\nhead: {handle.head_id}   usage total: {handle.usage_total.to_dict()}")
    print("\ngit log of the session:")
    sys.stdout.flush()
    subprocess.run(["git", "--git-dir", os.path.join(s.path, "git"), "log", "--format=  %h %s"], check=False)
    with open(os.path.join(workspace, "SUMMARY.md")) as f:
        print(f"\nSUMMARY.md in the workspace: {f.read().strip()!r}")
    if keep:
        print(f"\nsession: {h.session_id} (pass --session {h.session_id} to `sessiondag run` to continue)")
    else:
        print(f"\nsession: {h.session_id} (in a temporary state dir, removed now; set SESSIONDAG_HOME to keep it)")
    store.close()
    return 0
