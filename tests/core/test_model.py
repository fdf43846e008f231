"""Call validation and serialization."""

import orjson
import pytest

from sessiondag.core.errors import InvalidNodeError
from sessiondag.core.model import ROOT, Call, error_metadata, make_root, usage_of


@pytest.mark.parametrize("role", ["assistant", "tool", "", None, "USER"])
def test_unknown_role_refused(role):
    with pytest.raises(InvalidNodeError, match="role"):
        Call(role, "x", predecessor=ROOT)


@pytest.mark.parametrize("status", ["done", "failed", "", None, "Running"])
def test_unknown_status_refused(status):
    with pytest.raises(InvalidNodeError, match="status"):
        Call("user", "x", status=status)


def test_optional_fields_are_keyword_only():
    with pytest.raises(TypeError):
        Call("user", "x", "input-positional")  # type: ignore[misc]
    c = Call("user", "x", input="i", output="o")
    assert (c.input, c.output, c.status, c.caller, c.predecessor) == ("i", "o", "completed", ROOT, None)


@pytest.mark.parametrize("kwargs", [
    {"name": 3}, {"caller": ""}, {"caller": None}, {"predecessor": ""}, {"predecessor": 5},
    {"reads": "abc"}, {"reads": [1]}, {"metadata": []}, {"id": ""}, {"id": "x" * 129},
])
def test_bad_fields_refused(kwargs):
    args = {"name": "n", **kwargs}
    name = args.pop("name")
    with pytest.raises(InvalidNodeError):
        Call("user", name, **args)


def test_ids_are_unique_and_not_git_hashes():
    ids = {Call("user", "x").id for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 24 for i in ids)


def test_orjson_round_trip():
    c = Call("llm", "model-x", input={"messages": [1, 2]}, output="héllo\n\"q\"", status="running",
             caller=ROOT, predecessor="abc", reads=["r1", "r2"],
             metadata={"gen_ai.usage.input_tokens": 3, "nested": {"a": [None, 1.5]}}, seq=7, created_at=12.5)
    raw = c.to_json()
    d = orjson.loads(raw)
    assert list(d) == ["id", "seq", "created_at", "role", "name", "input", "output", "status",
                       "caller", "predecessor", "reads", "metadata"]
    back = Call.from_dict(d)
    assert back == c
    assert back.to_json() == raw


@pytest.mark.parametrize("d", [
    [], "x", {"role": "user"}, {"name": "x"}, {"role": "user", "name": "x", "bogus": 1},
    {"role": "user", "name": "x", "seq": "1"}, {"role": "user", "name": "x", "seq": True},
    {"role": "user", "name": "x", "created_at": "now"}, {"role": "bot", "name": "x"},
])
def test_from_dict_refuses_malformed(d):
    with pytest.raises(InvalidNodeError):
        Call.from_dict(d)


def test_from_dict_nulls_take_defaults():
    c = Call.from_dict({"role": "user", "name": "x", "reads": None, "metadata": None, "caller": None, "id": None})
    assert c.reads == [] and c.metadata == {} and c.caller == ROOT and c.id


def test_root_and_usage_helpers():
    r = make_root(1.0)
    assert r.id == ROOT and r.is_root and r.seq == 0 and not r.is_root_level
    llm = Call("llm", "m", metadata={"gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2})
    assert usage_of(llm) == (5, 2)
    assert usage_of(Call("code", "f", metadata=dict(llm.metadata))) == (0, 0)
    assert usage_of(Call("llm", "m", metadata={"gen_ai.usage.input_tokens": "5"})) == (0, 0)
    try:
        raise RuntimeError("boom")
    except RuntimeError as e:
        md = error_metadata(e, "trace")
    assert md == {"type": "RuntimeError", "message": "boom", "trace": "trace"}
