"""Damaged journal records under a running daemon (issue 19, items 8 and 9): a caller cycle never
hangs anything, a repeated seq is never laundered into git; the damage is reported with the first
bad record's offset, what is before it stays readable, nothing is acknowledged after it, and the
session still opens after a restart (acknowledged nodes lost: 0)."""

import os
import signal
import sys

import anyio
import pytest

from sessiondag.store import SessionStore
from sessiondag_client import connect_unix
from sessiondag_client.wire.errors import CorruptError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "store"))
from journal_plant import last_node, node, plant  # noqa: E402

pytestmark = pytest.mark.anyio


async def _session_with_nodes(c, sid, workdir, commit=False):
    h = await c.open(sid, working_dir=str(workdir))
    u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "kept", "predecessor": "ROOT"})
    if commit:
        await c.commit(h.id)
    llm, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "also kept", "caller": u.id,
                                   "predecessor": u.id})
    return h, [u.id, llm.id]


async def _refused_after(c, sid, ids, at):
    with anyio.fail_after(30):  # a hang is a failure, not a stuck test
        assert [n.id for n in await c.get_branch(sid)] == ids
        await c.render(sid)
        with pytest.raises(CorruptError) as ei:
            await c.append(sid, {"role": "user", "name": "me", "output": "after", "predecessor": ids[-1]})
        assert f"at byte {at}" in str(ei.value)
        with pytest.raises(CorruptError):
            await c.commit(sid)
        assert [n.id for n in await c.get_branch(sid)] == ids


def _reopened(state_dir, sid, workdir):
    store = SessionStore(state_dir)
    try:
        h = store.resume_session(sid, working_dir=workdir)
        s = store.session(h.id)
        return [n.id for n in s.get_branch()], s.damage
    finally:
        store.close()


async def test_a_caller_cycle_is_refused_not_walked(daemon_factory, state_dir, workdir):
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d.socket)
    try:
        h, ids = await _session_with_nodes(c, "cycle", workdir)
        path = str(state_dir / "sessions" / h.id)
        t = last_node(os.path.join(path, "journal.log"))
        at = plant(path, [node(t, id="x1", seq=t["seq"] + 1, role="code", name="f", caller="x2", predecessor=None),
                          node(t, id="x2", seq=t["seq"] + 2, role="code", name="f", caller="x1", predecessor=None)])
        await _refused_after(c, h.id, ids, at)
    finally:
        await c.aclose()
    assert d.stop(signal.SIGTERM, timeout=30) == 0
    branch, damage = _reopened(state_dir, "cycle", workdir)
    assert branch == ids and damage.offset == at and "caller 'x2' does not exist yet" in damage.reason


async def test_a_repeated_seq_is_not_laundered_into_git(daemon_factory, state_dir, workdir):
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d.socket)
    try:
        h, ids = await _session_with_nodes(c, "dupseq", workdir, commit=True)
        path = str(state_dir / "sessions" / h.id)
        t = last_node(os.path.join(path, "journal.log"))
        # a sibling of the newest node under another id, repeating its seq
        at = plant(path, [node(t, id="d1", seq=t["seq"], caller=ids[0], predecessor=ids[0])])
        await _refused_after(c, h.id, ids, at)
    finally:
        await c.aclose()
    assert d.stop(signal.SIGTERM, timeout=30) == 0
    d2 = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d2.socket)
    try:
        h2 = await c.open("dupseq", working_dir=str(workdir))  # not corrupt: what is before the damage reads
        assert [n.id for n in await c.get_branch(h2.id)] == ids
    finally:
        await c.aclose()
    assert d2.stop(signal.SIGTERM, timeout=30) == 0
