"""Data-driven render cases from cases.yaml, built through the real store."""

from __future__ import annotations

import os

import pytest
import yaml

from sessiondag.context.messages import render_dag_messages
from sessiondag.context.render import render_context
from sessiondag.store import SessionStore

from .harness import build, new_session

CASES = yaml.safe_load(open(os.path.join(os.path.dirname(__file__), "cases.yaml")))


def _ids(names, ids):
    return [names.get(i, i) for i in ids]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case, tmp_path, monkeypatch):
    store, s = new_session(tmp_path / "state")
    try:
        names = build(s, case["steps"], monkeypatch)
        for r in case["renders"]:
            view, other = s, None
            if r.get("env"):  # a store's sessions render by its settings: other switches, another store
                with monkeypatch.context() as mp:
                    for k, v in r["env"].items():
                        mp.setenv(k, str(v))
                    other = SessionStore(store.state_dir)
                view = other.session(s.id)
            try:
                head = names.get(r["head"], r["head"]) if "head" in r else None
                frame = names.get(r["frame"], r["frame"]) if r.get("frame") else None
                rc = render_context(view, head, frame=frame)
                assert [c.id for c in rc.nodes] == _ids(names, r["ids"]), r
                if "system" in r:
                    assert rc.system_prompt == r["system"]
                for fmt in ("openai", "anthropic"):
                    if fmt in r:
                        assert render_dag_messages(rc, fmt, session=view) == r[fmt], (fmt, r)
                    # deterministic: the same input renders the same bytes, cached or not
                    a = render_dag_messages(rc, fmt, session=view)
                    assert render_dag_messages(render_context(view, head, frame=frame), fmt, session=view) == a
            finally:
                if other is not None:
                    other.close()
    finally:
        store.close()
