"""Session id checks and derivation."""

import os

import pytest

from sessiondag.core.errors import InvalidSessionIdError
from sessiondag.core.ids import check_session_id, derive_session_id, mint_node_id, mint_session_id

HOSTILE = [
    "", ".", "..", "a/b", "a\\b", "../x", "a:b", "a\x00b", "x" * 129, ".hidden", "ümlaut", "日本",
    "a b", " a", "a\n", "a\tb", "/abs", "C:", "a*b", "a?b", "%2e%2e", "~user", "a\u200bb",
    None, 5, b"bytes", ["a"], 1.5,
]


@pytest.mark.parametrize("sid", HOSTILE, ids=repr)
def test_hostile_ids_refused(sid):
    with pytest.raises(InvalidSessionIdError) as ei:
        check_session_id(sid)
    assert ei.value.session_id is sid or ei.value.session_id == sid
    assert ei.value.data()["why"]


@pytest.mark.parametrize("sid", ["a", "x" * 128, "task-123_abc.v2", "A.b-c_", "0", "a..b"])
def test_good_ids_accepted(sid):
    assert check_session_id(sid) == sid


def test_minted_ids_are_valid_and_unique():
    sids = {mint_session_id() for _ in range(200)}
    assert len(sids) == 200
    for s in sids:
        assert check_session_id(s) == s
    assert mint_node_id() != mint_node_id()


def test_derive_session_id():
    assert derive_session_id("task-42", "planner") == "task-42-planner"
    for scope, role in [("a/b", "planner"), ("task", "pl:anner"), ("", "x"), ("x", ""),
                        (".x", "y"), ("x" * 120, "generator"), ("task", None)]:
        with pytest.raises(InvalidSessionIdError):
            derive_session_id(scope, role)


def test_a_valid_id_is_a_single_safe_path_component(tmp_path):
    for s in [mint_session_id(), "a..b", "x" * 128]:
        p = os.path.join(tmp_path, check_session_id(s))
        assert os.path.dirname(p) == str(tmp_path)
