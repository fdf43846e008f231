"""The client's Call decoding: the fast path (the wire dict becomes the Call's attributes) gives the
very Call the constructor path gives, for any node object, as the daemon sends it or not."""

from __future__ import annotations

import copy

from hypothesis import given, settings, strategies as st

from sessiondag_client.wire.types import Call

FIELDS = ("id", "seq", "created_at", "role", "name", "input", "output", "status", "caller", "predecessor",
          "reads", "metadata")
json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                        max_size=3), max_leaves=6)
wire_node = st.fixed_dictionaries({
    "id": st.text(min_size=1, max_size=8), "seq": st.integers(0, 10**6), "created_at": st.floats(0, 1e10),
    "role": st.sampled_from(["user", "llm", "code"]), "name": st.text(max_size=8), "input": json_value,
    "output": json_value, "status": st.sampled_from(["running", "completed", "error", "cancelled"]),
    "caller": st.text(min_size=1, max_size=8), "predecessor": st.none() | st.text(min_size=1, max_size=8),
    "reads": st.lists(st.text(max_size=8), max_size=3), "metadata": st.dictionaries(st.text(max_size=5), json_value,
                                                                                   max_size=3)})


@st.composite
def node_objects(draw):
    """Nodes as the daemon sends them, and variants: fields nulled, left out, or extra."""
    d = draw(wire_node)
    for k in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        d[k] = None
    for k in draw(st.lists(st.sampled_from([f for f in FIELDS if f not in ("role", "name")]), max_size=2,
                           unique=True)):
        d.pop(k, None)
    if draw(st.booleans()):
        d[draw(st.sampled_from(["extra", "usage"]))] = draw(json_value)
    return d


@settings(deadline=None)
@given(node_objects())
def test_fast_decode_is_the_constructor(d):
    try:
        want = Call._build(copy.deepcopy(d))
    except TypeError:  # role or name null: the constructor refuses, and so must the fast path
        try:
            Call.from_dict(d)
        except TypeError:
            return
        raise AssertionError("from_dict took a node the constructor refuses")
    got = Call.from_dict(d)
    assert type(got) is Call
    assert got == want and repr(got) == repr(want) and got.to_dict() == want.to_dict()


@settings(deadline=None)
@given(wire_node)
def test_a_node_as_the_daemon_sends_it_takes_the_fast_path(d):
    got = Call.from_dict(d)
    assert vars(got) is d  # no copy: the parsed object is the Call's state
    assert got == Call._build(copy.deepcopy(d))
