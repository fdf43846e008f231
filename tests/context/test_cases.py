"""Data-driven render cases from cases.yaml, built through the real store."""

from __future__ import annotations

import os

import pytest
import yaml

from sessiondag.context.messages import render_dag_messages
from sessiondag.context.render import render_context

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
            with monkeypatch.context() as mp:
                for k, v in (r.get("env") or {}).items():
                    mp.setenv(k, str(v))
                head = names.get(r["head"], r["head"]) if "head" in r else None
                frame = names.get(r["frame"], r["frame"]) if r.get("frame") else None
                rc = render_context(s, head, frame=frame)
                assert [c.id for c in rc.nodes] == _ids(names, r["ids"]), r
                if "system" in r:
                    assert rc.system_prompt == r["system"]
                for fmt in ("openai", "anthropic"):
                    if fmt in r:
                        assert render_dag_messages(rc, fmt, session=s) == r[fmt], (fmt, r)
                    # deterministic: the same input renders the same bytes, cached or not
                    a = render_dag_messages(rc, fmt, session=s)
                    assert render_dag_messages(render_context(s, head, frame=frame), fmt, session=s) == a
    finally:
        store.close()
