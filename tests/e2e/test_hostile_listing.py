"""The session listing reads session.json of every session, and a disk is hostile: a session.json
that does not hold up (not JSON, not an object, another session's, a bool for a schema version, a
number for a working dir, a string for a time, a FIFO) is the row of an unreadable session
(`readable: false`, `error` saying why) and a logged warning; an entry whose name no session id
can have is skipped with a warning. The listing never fails and every row has the types
rpc_schema's session_summary gives, in the store and through a real daemon (session/list)."""

import logging
import os

import jsonschema
import orjson
import pytest

from sessiondag import ROOT, Call
from sessiondag.rpc import schema as rpc_schema
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

GOOD_INFO = {"schema_version": 1, "created_at": 1700000000.5}

# session id -> what its session.json is made to hold (None: a FIFO in its place)
BAD = {
    "wd-number": {**GOOD_INFO, "session_id": "wd-number", "working_dir": 5},
    "created-text": {**GOOD_INFO, "session_id": "created-text", "created_at": "yesterday"},
    "created-bool": {**GOOD_INFO, "session_id": "created-bool", "created_at": True},
    "version-bool": {**GOOD_INFO, "session_id": "version-bool", "schema_version": True},
    "other-id": {**GOOD_INFO, "session_id": "someone-else"},
    "a-list": [1, 2],
    "not-json": b"{nope",
    "fifo": None,
}


def _plant(state_dir: str, workdir: str) -> None:
    store = SessionStore(state_dir)
    for sid in ["good", "good-title-odd", *BAD]:
        store.open_session(sid, working_dir=workdir)
        s = store.session(sid)
        s.append(Call("user", "me", output=f"hello {sid}", predecessor=ROOT))
        s.commit_turn()
    store.close()
    sessions = os.path.join(state_dir, "sessions")
    for sid, content in BAD.items():
        info = os.path.join(sessions, sid, "session.json")
        os.unlink(info)
        if content is None:
            os.mkfifo(info)
        else:
            with open(info, "wb") as f:
                f.write(content if isinstance(content, bytes) else orjson.dumps(content))
    odd = os.path.join(sessions, "good-title-odd", "session.json")
    with open(odd, "rb") as f:
        info = orjson.loads(f.read())
    with open(odd, "wb") as f:
        f.write(orjson.dumps({**info, "title": {"not": "a string"}}))   # a title is cosmetic: shown as none
    os.mkdir(os.path.join(sessions, "not a session id"))
    os.mkdir(os.path.join(sessions.encode(), b"\xff\xfe-not-utf8"))


def _check_rows(rows: list, workdir: str) -> None:
    jsonschema.Draft202012Validator(rpc_schema.result_schema("session/list")).validate({"sessions": rows})
    by_id = {r["session_id"]: r for r in rows}
    assert set(by_id) == {"good", "good-title-odd", *BAD}
    for sid in BAD:
        assert by_id[sid]["readable"] is False and by_id[sid]["error"], sid
    for sid in ("good", "good-title-odd"):
        assert by_id[sid]["readable"] is True and by_id[sid]["working_dir"] == os.path.realpath(workdir)
        assert "error" not in by_id[sid]
    assert by_id["good-title-odd"]["title"] is None


def test_the_store_lists_every_session_typed_and_warns_of_the_bad(state_dir, workdir, caplog):
    _plant(str(state_dir), str(workdir))
    store = SessionStore(str(state_dir))
    with caplog.at_level(logging.WARNING, logger="sessiondag.store.listing"):
        rows = store.list_sessions()
    _check_rows(rows, str(workdir))
    warned = " ".join(r.getMessage() for r in caplog.records)
    for name in [*BAD, "not a session id", "\udcff\udcfe-not-utf8"]:
        assert repr(name) in warned or name in warned, name
    assert sorted(r["session_id"] for r in store.list_sessions(working_dir=str(workdir))) == ["good", "good-title-odd"]
    for sid in BAD:                                   # nor can one be opened as if it were whole
        with pytest.raises(Exception) as e:
            store.session(sid)
        assert getattr(e.value, "code", None) == "session_resume", (sid, e.value)
    store.close()


@pytest.mark.anyio
async def test_session_list_through_the_daemon_is_typed_row_by_row(daemon_factory, state_dir, workdir, check):
    _plant(str(state_dir), str(workdir))
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d.socket)
    c.observer = check                                # every response validated against rpc_schema
    try:
        _check_rows(await c.list(), str(workdir))
        assert sorted(r["session_id"] for r in await c.list(str(workdir))) == ["good", "good-title-odd"]
    finally:
        await c.aclose()
