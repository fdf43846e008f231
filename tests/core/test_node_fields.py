"""check_node_fields (core/depth.py): one encode of a node's three fields on per-thread nested
lists decides exactly as check_encodable of each field alone — the same refusals, naming the same
field, at the same nesting depth — and leaves nothing behind for the next call or thread."""

import threading

from hypothesis import given, settings, strategies as st

from sessiondag.core.depth import MAX_DEPTH, TooDeepError, check_encodable, check_node_fields
from sessiondag.core.errors import InvalidNodeError


def nest(levels, leaf=1):
    v = leaf
    for i in range(levels):
        v = [v] if i % 2 else {"k": v}
    return v


def verdict(fn, *fields):
    try:
        fn(*fields)
    except TooDeepError as e:
        return ("deep", e.what)
    except InvalidNodeError as e:
        return ("invalid", str(e))
    return ("ok",)


def one_by_one(input, output, metadata):
    check_encodable(input, "input")
    check_encodable(output, "output")
    check_encodable(metadata, "metadata")


leaf = st.sampled_from([1, "x", None, 2.5, 2 ** 70, object(), {1: 2}, {"s": {1, 2}}])
field = st.one_of(leaf, st.builds(nest, st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3), leaf))


@settings(max_examples=300, deadline=None)
@given(field, field, field)
def test_one_encode_decides_as_three(input, output, metadata):
    assert verdict(check_node_fields, input, output, metadata) == verdict(one_by_one, input, output, metadata)


def test_the_depth_boundary_for_each_field():
    for pos, name in enumerate(("input", "output", "metadata")):
        ok, deep = [None, None, {}], [None, None, {}]
        ok[pos], deep[pos] = nest(MAX_DEPTH), nest(MAX_DEPTH + 1)
        assert verdict(check_node_fields, *ok) == ("ok",)
        assert verdict(check_node_fields, *deep) == ("deep", name)
        assert verdict(check_node_fields, *ok) == ("ok",)  # the refusal left the lists empty


def test_threads_do_not_share_the_lists():
    errors = []

    def work(depth, expect):
        for _ in range(2000):
            if verdict(check_node_fields, None, nest(depth), {}) != expect:
                errors.append(depth)
                return
    ts = [threading.Thread(target=work, args=(MAX_DEPTH, ("ok",))),
          threading.Thread(target=work, args=(MAX_DEPTH + 1, ("deep", "output")))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
