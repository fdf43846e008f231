"""`sessiondag demo`: the main job end to end on the default store, in a temporary workspace."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile

from ..core.model import ROOT, Call
from ..store import SessionStore


def _turn(s, user_text: str, reply: str, predecessor: str) -> Call:
    u = s.append(Call("user", "you", output=user_text, predecessor=predecessor))
    s.append(Call("llm", "scripted", output=reply, caller=u.id, predecessor=u.id,
                  metadata={"gen_ai.usage.input_tokens": len(user_text.split()) * 4,
                            "gen_ai.usage.output_tokens": len(reply.split()) * 4}))
    s.commit_turn()
    return u


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="sessiondag demo", description=__doc__)
    ap.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME or $XDG_STATE_HOME/sessiondag)")
    args = ap.parse_args(argv)
    store = SessionStore(args.state_dir)
    workspace = tempfile.mkdtemp(prefix="sessiondag-demo-")
    handle = store.open_session(working_dir=workspace)
    s = store.session(handle.id)
    print(f"state dir: {store.state_dir}\nworkspace: {workspace}\nsession:   {handle.id}\n")

    first = _turn(s, "What files are in this workspace?", "The workspace is empty.", ROOT)
    second = _turn(s, "Create a README.", "I would write README.md with a title.", s.head_id)
    # a retry of the second turn is an ordinary fork from its predecessor
    _turn(s, "Create a README with install steps.", "README.md: title, install, usage.", second.predecessor)
    s.name_branch(s.head_id, "readme-with-install")
    # a sub-agent gets a spawn branch: a clean context hanging on the call that spawned it
    spawn_from = s.get_branch()[-1].id
    sub = s.spawn_branch(spawn_from, source="task", name="sub-agent", content="Check the README for typos.")
    s.append(Call("llm", "scripted", output="No typos found.", caller=sub, predecessor=sub))
    s.commit_turn("sub-agent: checked the README")

    print("branches:")
    for b in s.list_branches():
        flags = ",".join(f for f, on in (("main", b.main), ("HEAD", b.current)) if on)
        path = " → ".join(str(c.output)[:28] for c in s.get_branch(b.head_id))
        label = b.name or (f"spawn of {b.spawn_root}" if b.spawn_root else "")
        print(f"  {b.head_id} [{flags or '-'}] {label}\n      {path}")
    h = store.handle(s)
    print(f"\nhead: {h.head_id}   usage total: {h.usage_total.to_dict()}")
    print("\ngit log of the session:")
    sys.stdout.flush()
    subprocess.run(["git", "--git-dir", f"{s.path}/git", "log", "--format=  %h %s"], check=False)
    print(f"\nsession: {handle.id} (stored under {s.path})")
    store.close()
    return 0
