"""Issue 8's leftovers in the store: a library writer whose session directory is deleted by another
process acknowledges nothing more; a spawn root and its branch name are one journal record (a
crash or fault can never leave a nameless spawn); a node older code stored nested too deep for an
RPC reply still answers session/get_node (its stored encoding, spliced verbatim)."""

import os
import signal
import subprocess
import sys

import orjson
import pytest

from sessiondag import ROOT, Call
from sessiondag.core.depth import ENCODER_LIMIT
from sessiondag.core.errors import SessionDeletedError, StorageError
from sessiondag.store import SessionStore
from sessiondag_client.sync import SyncClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import DaemonProc, SchemaCheck  # noqa: E402


def _rm_by_other_process(path):
    subprocess.run([sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1])", path], check=True)


def _journal_text(path):
    with open(os.path.join(path, "journal.log"), "rb") as f:
        return f.read()


# --- a session directory deleted under a library writer --------------------------------------
@pytest.mark.parametrize("how", ["deleted", "replaced", "moved", "moved, no /proc"])
@pytest.mark.process
def test_a_writer_whose_session_dir_was_deleted_acknowledges_nothing(tmp_path, how):
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("gone", working_dir=None).id)
    u = s.append(Call("user", "u", output="before", predecessor=ROOT))
    n = len(s.graph.nodes)
    if how.startswith("moved"):  # a rename of the whole directory: the journal file stays linked
        if how.endswith("no /proc"):  # the check falls back to a stat of the path
            s.journal._fd_path = None
        os.rename(s.path, tmp_path / "elsewhere")
    else:
        _rm_by_other_process(s.path)
    if how == "replaced":  # another session of the same id created in its place
        SessionStore(state).start_session("gone", working_dir=None)
    with pytest.raises(SessionDeletedError) as ei:
        s.append(Call("llm", "m", output="after", predecessor=u.id))
    assert ei.value.code == "session_deleted" and ei.value.data()["session_id"] == "gone"
    assert len(s.graph.nodes) == n and s.graph.head_id == u.id  # nothing applied in memory
    for write in (lambda: s.update(u.id, metadata={"x": 1}), lambda: s.name_branch(u.id, "n"),
                  lambda: s.set_meta("k", 1)):
        with pytest.raises(SessionDeletedError):
            write()
    if how == "replaced":  # the new session never saw the old writer's records
        assert b"after" not in _journal_text(s.path) and b'"k"' not in _journal_text(s.path)
    if how.startswith("moved"):  # what was refused was unwritten again in the moved journal
        moved = _journal_text(tmp_path / "elsewhere")
        assert b"before" in moved and b"after" not in moved and b'"k"' not in moved
    store.close()


def test_a_durable_append_asks_after_its_file_with_one_readlink_and_never_a_stat(tmp_path, monkeypatch):
    """The presence check after each fdatasync is one readlink of the descriptor (store/open_file.py:
    a stat would make the next write stamp a fine-grained mtime, one more inode write per append)."""
    store = SessionStore(tmp_path / "state")
    s = store.session(store.start_session("here", working_dir=None).id)
    u = s.append(Call("user", "u", output="first", predecessor=ROOT))  # opened, its tail scrubbed
    seen = []
    for name in ("readlink", "stat", "lstat", "fstat"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _real=real, _name=name, **k: (seen.append((_name, a[0])), _real(*a, **k))[1])
    for i in range(3):
        u = s.append(Call("llm", "m", output=f"reply {i}", predecessor=u.id))
    monkeypatch.undo()
    assert seen == [("readlink", f"/proc/self/fd/{s.journal._fd}")] * 3
    store.close()


@pytest.mark.process
def test_a_group_write_into_a_deleted_session_is_refused_whole(tmp_path):
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("gone2", working_dir=None).id)
    s.append(Call("user", "u", output="before", predecessor=ROOT))
    n = len(s.graph.nodes)
    _rm_by_other_process(s.path)
    with pytest.raises(SessionDeletedError):
        with s.batched():
            for i in range(3):
                s.append(Call("user" if i % 2 else "llm", "g", output=f"g{i}", predecessor=s.graph.head_id))
    assert s.loaded_graph is None or len(s.loaded_graph.nodes) == n
    store.close()


# --- spawn_branch: one record --------------------------------------------------------------------
def _chat(s):
    u = s.append(Call("user", "u", output="hi", predecessor=ROOT))
    return s.append(Call("llm", "m", output="calling", predecessor=u.id))


def test_a_named_spawn_is_one_journal_record(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.start_session("sp", working_dir=None).id)
    llm = _chat(s)
    end = s.journal.offset
    rid = s.spawn_branch(llm.id, source="task", name="worker", content="do it")
    with open(os.path.join(s.path, "journal.log"), "rb") as f:
        f.seek(end)
        lines = f.read().split(b"\0", 1)[0].splitlines()
    assert len(lines) == 1
    rec = orjson.loads(lines[0])
    assert rec["a"]["id"] == rid and rec["v"] == "worker"
    assert s.graph.branch_names[rid] == "worker"
    with pytest.raises(Exception):  # a bad name refuses the whole spawn, nothing written
        s.spawn_branch(llm.id, source="task", name="x" * 500)
    assert s.journal.offset == end + len(lines[0]) + 1
    s.commit_turn()
    store.close()
    again = SessionStore(tmp_path / "state")
    try:
        g = again.session("sp").graph
        assert g.branch_names[rid] == "worker" and g.nodes[rid].is_spawn_root
    finally:
        again.close()


def test_a_fault_inside_a_named_spawn_leaves_neither_root_nor_name(tmp_path, monkeypatch):
    import errno
    store = SessionStore(tmp_path / "state")
    s = store.session(store.start_session("spf", working_dir=None).id)
    llm = _chat(s)
    n, end = len(s.graph.nodes), s.journal.offset
    real = os.fdatasync

    def fail(fd):
        raise OSError(errno.EIO, "Input/output error (injected)")
    monkeypatch.setattr(os, "fdatasync", fail)
    with pytest.raises(StorageError):
        s.spawn_branch(llm.id, source="task", name="lost", content="never")
    monkeypatch.setattr(os, "fdatasync", real)
    assert len(s.graph.nodes) == n and "lost" not in s.graph.branch_names.values()
    assert s.journal.offset == end and b"never" not in _journal_text(s.path)
    rid = s.spawn_branch(llm.id, source="task", name="kept")
    assert s.graph.branch_names[rid] == "kept"
    store.close()


SPAWNER = r"""
import os, sys
from sessiondag import ROOT, Call
from sessiondag.store import SessionStore
s = SessionStore(sys.argv[1]).session(sys.argv[2])
llm = s.graph.get_branch()[-1].id
print("ready", flush=True)
i = 0
while True:
    i += 1
    print(s.spawn_branch(llm, source="task", name=f"w{os.getpid()}-{i}", content="x" * (i % 5000)), flush=True)
"""


@pytest.mark.process
def test_killed_while_spawning_never_leaves_a_nameless_spawn(tmp_path):
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("spk", working_dir=None).id)
    _chat(s)
    s.commit_turn()
    store.close()
    env = dict(os.environ, SESSIONDAG_HOME=str(state))
    for round_ in range(6):
        p = subprocess.Popen([sys.executable, "-c", SPAWNER, str(state), "spk"], stdout=subprocess.PIPE, env=env)
        assert p.stdout.readline().strip() == b"ready"
        # let it acknowledge some spawns, then kill it wherever it is (pwrite, fdatasync, between)
        acked = [p.stdout.readline().strip().decode() for _ in range(5 + 7 * round_)]
        p.send_signal(signal.SIGKILL)
        p.wait()
    store = SessionStore(state)
    try:
        g = store.session("spk").graph
        spawns = [c for c in g.nodes.values() if c.is_spawn_root]
        assert spawns, "the child never spawned"
        assert all(g.branch_names.get(c.id) == c.name for c in spawns), "a spawn root lost its name"
        assert all(a in g.nodes for a in acked)
    finally:
        store.close()


# --- a node older code stored nested too deep for an RPC reply ----------------------------------
def nest(levels):
    v = "leaf"
    for _ in range(levels):
        v = {"k": v}
    return v


def _deepest_journalable(node):
    """The deepest metadata older code could journal: the record {"a": node} at the encoder's limit."""
    k = ENCODER_LIMIT
    while True:
        node["metadata"] = {"m": nest(k)}
        try:
            orjson.dumps({"a": node})
            return node
        except orjson.JSONEncodeError:
            k -= 1


@pytest.mark.process
def test_get_node_answers_a_node_stored_too_deep_by_older_code(tmp_path):
    state, work = str(tmp_path / "state"), str(tmp_path / "work")
    os.makedirs(work)
    store = SessionStore(state)
    s = store.session(store.start_session("olddeep", working_dir=work).id)
    u = s.append(Call("user", "u", output="hi", predecessor=ROOT))
    node = Call("llm", "m", output="deep", predecessor=u.id, seq=3, created_at=1.0).to_dict()
    node = _deepest_journalable(node)
    with s.journal.locked():  # what older code wrote: the record, without today's depth check
        s.catch_up.sync()
        s.journal.append([{"a": node}])
    committed_id = node["id"]
    s.catch_up.drop()
    assert s.graph.nodes[committed_id].metadata == node["metadata"]
    store.close()
    env = dict(os.environ, SESSIONDAG_HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path))
    for phase in ("journal", "snapshot"):
        d = DaemonProc(["--socket", str(tmp_path / f"{phase}.sock"), "--state-dir", state], env=env)
        check = SchemaCheck()
        c = None
        try:
            c = SyncClient.connect(d.socket)
            c.inner.observer = check
            c.open("olddeep", working_dir=work)
            got = c.call("session/get_node", {"session_id": "olddeep", "node_id": committed_id})
            assert got["node"] == node
            branch = c.call("session/get_branch", {"session_id": "olddeep"})
            assert branch["nodes"][-1] == node
            assert c.call("session/get_node", {"session_id": "olddeep", "node_id": u.id})["node"] == u.to_dict()
            if phase == "journal":
                c.call("session/commit", {"session_id": "olddeep"})
            check.assert_ok()
        finally:
            if c is not None:
                c.close()
            d.stop(signal.SIGTERM)
