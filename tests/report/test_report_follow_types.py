"""report/follow.py reads each notification through the client's generated types (narrowed on
`method`), so it can only read keys the schema gives that notification. It used to read a `kind`
off every notification's params, `session/did_change` included, whose params have none (its
changes carry their kinds in `changes`): mypy now refuses that, and accepts follow.py as it is."""

from __future__ import annotations

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLLOW = os.path.join(ROOT, "daemon", "sessiondag", "report", "follow.py")
ARGS = ["--strict", "--disallow-any-explicit", "--no-incremental", "--follow-imports=silent",
        "--python-version=3.11"]


def _mypy(monkeypatch, path):
    from mypy import api
    monkeypatch.setenv("MYPYPATH", os.pathsep.join([os.path.join(ROOT, "daemon"), os.path.join(ROOT, "clients", "python")]))
    out, _, rc = api.run([*ARGS, str(path)])
    return rc, out


@pytest.mark.slow
def test_follow_reads_only_keys_the_schema_gives_each_notification(tmp_path, monkeypatch):
    rc, out = _mypy(monkeypatch, FOLLOW)
    assert rc == 0, out
    with open(FOLLOW) as f:
        src = f.read()
    old = src.replace('''            elif msg["method"] != "daemon/will_stop":  # did_change, did_rebind, did_unbind: catch up
                if msg["params"]["session_id"] == session_id:
                    changed()''', '''            elif msg["method"] == "session/did_change":
                if msg["params"]["kind"] not in QUIET_KINDS:
                    changed()''')
    assert old != src
    bad = tmp_path / "follow_old.py"
    bad.write_text(old)
    rc, out = _mypy(monkeypatch, bad)
    assert rc == 1 and 'TypedDict "SessionDidChangeParams" has no key "kind"' in out, out
