"""What a process writes into a session under its settings (spill threshold, aging tail) is recorded
in the session; a second process with another environment follows the record, and says so."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from sessiondag.core.settings import SPECS, WRITE_POLICY_KEY

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)

CLEARED = {v for s in SPECS for v in s.env} | {"SESSIONDAG_CONFIG", "XDG_CONFIG_HOME"}
CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]

WRITER = textwrap.dedent("""
    import json, sys
    from sessiondag import Call, ROOT
    from sessiondag.context.aging import advance_aging
    from sessiondag.store import SessionStore
    state, sid, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = SessionStore(state, commit_hooks=(advance_aging,))   # as the runtime and the daemon install it
    if not store.exists(sid):
        store.start_session(sid, working_dir=None)
    s = store.session(sid)
    head = s.head_id
    for i in range(turns):
        u = s.append(Call("user", "u", output="q" * 500, predecessor=head))
        tool = s.append(Call("code", "tool", output="r" * 500, caller=u.id))
        head = s.append(Call("llm", "m", output="a", caller=u.id, predecessor=u.id)).id
        s.commit_turn()
    spilled = [c.id for c in s.graph.nodes.values() if isinstance(c.output, dict) and "$blob" in c.output]
    print(json.dumps({"policy": s.graph.extra.get("write_policy"), "aged": s.graph.extra.get("aged_before_seq"),
                      "users": [c.seq for c in s.get_branch() if c.role == "user"], "spilled": len(spilled),
                      "nodes": len(s.get_branch())}))
    store.close()
""")


def writer(tmp_path, env, turns):
    e = {k: v for k, v in os.environ.items() if k not in CLEARED}
    e.update(XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), **env)
    r = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path / "state"), "shared", str(turns)], env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_the_first_writer_records_the_policy_and_the_second_follows_it(tmp_path):
    a, a_log = writer(tmp_path, {"SESSIONDAG_NODE_SPILL": "100", "SESSIONDAG_TOOL_AGING_TAIL_TURNS": "1"}, 2)
    assert a["policy"] == {"node_spill": 100, "tool_aging_tail_turns": 1}
    assert a["spilled"] == 4 and "write policy" not in a_log        # 2 turns x (user, tool) over 100 bytes
    # the second process wants no spill and a longer tail: the session's record wins, and it is told
    b, b_log = writer(tmp_path, {"SESSIONDAG_NODE_SPILL": "off", "SESSIONDAG_TOOL_AGING_TAIL_TURNS": "3"}, 2)
    assert b["policy"] == a["policy"]
    assert b["spilled"] == 8                                          # its own writes spilled by the record
    assert b["aged"] == b["users"][-1]                                # tail 1 (recorded), not 3
    assert b_log.count("records node_spill=100") == 1 and "SESSIONDAG_NODE_SPILL" in b_log
    assert b_log.count("records tool_aging_tail_turns=1") == 1 and "SESSIONDAG_TOOL_AGING_TAIL_TURNS" in b_log
    # a process with the defaults is not asked anything: it simply follows the record
    c, c_log = writer(tmp_path, {}, 1)
    assert c["spilled"] == 10 and "write policy" not in c_log and c["aged"] == c["users"][-1]
    # `sessiondag config --session` shows the record and what it overrides in this environment
    e = {k: v for k, v in os.environ.items() if k not in CLEARED}
    e.update(XDG_CONFIG_HOME=str(tmp_path / "xdg-config"), SESSIONDAG_HOME=str(tmp_path / "state"),
             SESSIONDAG_NODE_SPILL="off")
    r = subprocess.run(CLI + ["config", "--session", "shared", "--json"], env=e, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    sess = json.loads(r.stdout)["session"]
    assert sess["write_policy"] == {"node_spill": 100, "tool_aging_tail_turns": 1}
    assert sess["overridden"] == [{"name": "node_spill", "recorded": 100, "this_process": None,
                                   "source": "env SESSIONDAG_NODE_SPILL"}]
    t = subprocess.run(CLI + ["config", "--session", "shared"], env=e, capture_output=True, text=True, timeout=120)
    assert "session shared write policy: node_spill=100 tool_aging_tail_turns=1" in t.stdout
    assert "node_spill: this process's None (env SESSIONDAG_NODE_SPILL) is not used for this session" in t.stdout


def test_two_writers_racing_on_a_new_session_agree_on_one_policy(tmp_path):
    """Both start before either wrote: whoever writes first records; the other finds it under the lock."""
    e = {k: v for k, v in os.environ.items() if k not in CLEARED}
    e["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    state = str(tmp_path / "state")
    from sessiondag.store import SessionStore
    store = SessionStore(state)
    store.start_session("race", working_dir=None)
    store.close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, state, "race", "3"],
                              env=dict(e, SESSIONDAG_NODE_SPILL=spill), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for spill in ("100", "off")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    store = SessionStore(state)
    s = store.session("race")
    policy = s.graph.extra[WRITE_POLICY_KEY]
    spilled = [c for c in s.graph.nodes.values() if isinstance(c.output, dict) and "$blob" in c.output]
    big = [c for c in s.graph.nodes.values() if c.role in ("user", "code") and c.name in ("u", "tool")]
    assert len(big) == 12
    assert len(spilled) == (12 if policy["node_spill"] == 100 else 0)   # every write by the one record
    store.close()
