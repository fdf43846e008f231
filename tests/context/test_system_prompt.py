import pytest

from sessiondag.core.errors import ConfigError

from sessiondag import Call
from sessiondag.context.render import render_context
from sessiondag.context.system_prompt import (build_system_prompt, latest_system_prompt, prompt_hash,
                                              record_system_prompt)
from sessiondag.core.errors import InvalidNodeError

from .harness import new_session

TOOLS = [{"name": "write", "description": "write a file", "parameters": {"type": "object", "b": 1, "a": 2}},
         {"name": "read", "description": "read a file", "parameters": {}}]


def test_one_assembler_fixed_order_and_bytes():
    text = build_system_prompt(identity="You are sd.", memory="uses tabs", tools=TOOLS,
                               skills=["refactor", {"name": "review", "description": "review diffs"}],
                               mode="plan")
    assert text == (
        "You are sd.\n\n# Project memory\n\nuses tabs\n\n# Tools\n\n"
        "## read\nread a file\nParameters: {}\n\n"
        '## write\nwrite a file\nParameters: {"a":2,"b":1,"type":"object"}\n\n'
        "# Skills\n\n- refactor\n- review: review diffs\n\n# Mode\n\nplan\n")
    # the tool order given does not matter; the bytes are stable
    assert build_system_prompt(identity="You are sd.", memory="uses tabs", tools=TOOLS[::-1],
                               skills=["refactor", {"name": "review", "description": "review diffs"}],
                               mode="plan") == text
    assert build_system_prompt(identity="You are sd.", tools=TOOLS, slim=True) == "You are sd.\n"
    with pytest.raises(InvalidNodeError):
        build_system_prompt(identity=" ")
    with pytest.raises(InvalidNodeError):
        build_system_prompt(identity="x", tools=[{"description": "nameless"}])


def test_recorded_only_when_the_hash_changes(session):
    p1 = record_system_prompt(session, "one")
    assert p1.caller == "ROOT" and p1.predecessor == "ROOT" and p1.metadata["sha256"] == prompt_hash("one")
    assert session.head_id == p1.id
    assert record_system_prompt(session, "one") is None
    u = session.append(Call("user", "alice", output="hi", predecessor=session.head_id))
    assert record_system_prompt(session, "one") is None
    p2 = record_system_prompt(session, "two")
    assert p2.predecessor == u.id and latest_system_prompt(session).id == p2.id
    assert latest_system_prompt(session, u.id).id == p1.id
    rc = render_context(session)
    assert rc.system_prompt == "two" and rc.system_prompt_id == p2.id and rc.nodes == [u]
    # back on the older position the older prompt is the chain's latest: "two" is recorded again
    session.checkout(u.id)
    assert render_context(session).system_prompt == "one"
    p3 = record_system_prompt(session, "two")
    assert p3 is not None and p3.id != p2.id


def test_bad_expose_default_switch_raises_when_the_store_is_built(session, monkeypatch, tmp_path):
    record_system_prompt(session, "one")
    monkeypatch.setenv("SESSIONDAG_EXPOSE_DEFAULT", "most")
    with pytest.raises(ConfigError, match="SESSIONDAG_EXPOSE_DEFAULT"):
        new_session(tmp_path / "another")
    assert render_context(session).system_prompt == "one"   # the store already open keeps its settings
