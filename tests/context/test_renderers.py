"""The fast renderer and the reference renderer (context/renderer.py) give equal messages and the
same bytes for every head, frame, format and manifest of generated sessions — cold, warm, after an
update and one node later — each on its own freshly opened copy of the session (no shared cache).
And the switch: `rendering.fast_render` off selects the reference renderer."""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag import Call
from sessiondag.context.aging import advance_aging
from sessiondag.context.renderer import FAST, REFERENCE, renderer_for
from sessiondag.core.errors import ConfigError
from sessiondag.store import SessionStore

from .test_encoded import AGING, FORMATS, OPS, build_session


def _all_renders(state: str, sid: str, r, frames: dict) -> dict:
    """Every render `r` gives on a freshly opened store: (messages as JSON, encoded, manifest)."""
    store = SessionStore(state, commit_hooks=(advance_aging,))
    try:
        s = store.session(sid)
        out = {}

        def both(key, h=None, fr=None, manifest=None):
            for f in FORMATS:
                msgs, m1 = r.messages(s, h, frame=fr, format=f, manifest=manifest)
                items, m2 = r.encoded(s, h, frame=fr, format=f, manifest=manifest)
                out[key, f] = (orjson.dumps(msgs), b"[" + b",".join(items) + b"]", m1, m2)
        heads = [b.head_id for b in s.list_branches()] + [s.head_id]
        for h in heads:
            both(("head", h), h)
            for fr in frames.get(h, ()):
                both(("frame", h, fr), h, fr)
        both("again")
        both("manifest", manifest=out["again", "openai"][2])
        said = [c for c in s.get_branch() if c.role in ("user", "llm")]
        if said:
            s.update(said[len(said) // 2].id, output="changed ☃")
        s.append(Call("user", "alice", output="one more \\\" ☃", predecessor=s.head_id, id="one-more"))
        both("more")
        return out
    finally:
        store.close()


@settings(max_examples=int(os.environ.get("SESSIONDAG_PROPERTY_EXAMPLES", "30")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.integers(0, 1000))
def test_fast_and_reference_renderers_give_the_same_bytes(ops, pick):
    with mock.patch.dict(os.environ, {"SESSIONDAG_NODE_SPILL": "1000", **AGING}):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")
            sid, frames = build_session(src, ops, pick)
            got = {}
            for r in (REFERENCE, FAST):
                state = os.path.join(d, r.name)
                shutil.copytree(src, state)
                got[r.name] = _all_renders(state, sid, r, frames)
            ref, fast = got["reference"], got["fast"]
            assert ref.keys() == fast.keys()
            for key in ref:
                assert ref[key][0] == ref[key][1], key  # each renderer: its messages are its bytes
                assert fast[key] == ref[key], key


def test_the_setting_switches_the_fast_path_off(tmp_path):
    """The switch is the store's setting (resolved once, when the store is built)."""
    stores = []

    def session_under(env):
        with mock.patch.dict(os.environ, env):
            store = SessionStore(str(tmp_path / f"s{len(stores)}"))
        stores.append(store)
        return store.session(store.open_session(None, working_dir=None).id)
    try:
        assert renderer_for(session_under({})) is FAST
        off = session_under({"SESSIONDAG_FAST_RENDER": "off"})
        assert renderer_for(off) is REFERENCE
        with mock.patch.dict(os.environ, {"SESSIONDAG_FAST_RENDER": "on"}):
            assert renderer_for(off) is REFERENCE   # the store's, not the environment's now
        with pytest.raises(ConfigError):
            session_under({"SESSIONDAG_FAST_RENDER": "sometimes"})
    finally:
        for store in stores:
            store.close()


# the render entry points below the switch; context/renderer.py picks between them
_BELOW_THE_SWITCH = {"render_messages", "render_bytes", "render_context"}
_CONTEXT_RENDERERS = {os.path.join("context", m) for m in ("render.py", "messages.py", "renderer.py")}


def _calls(tree, names):
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in names:
                yield name, n


def test_every_render_goes_through_the_switch():
    """With `rendering.fast_render` off no render takes the fast path: outside context/'s renderers
    nothing calls render_messages, render_bytes or render_context (they go through `renderer_for`),
    and within context/messages.py every render_context call says which path it takes (`fast=`)."""
    from source_tree import modules
    around = [f"{m.rel}:{n.lineno} {name}" for m in modules() if m.rel not in _CONTEXT_RENDERERS
              for name, n in _calls(m.tree, _BELOW_THE_SWITCH)]
    assert around == []
    messages = next(m for m in modules() if m.rel == os.path.join("context", "messages.py"))
    unsaid = [n.lineno for _, n in _calls(messages.tree, {"render_context"})
              if not any(k.arg == "fast" for k in n.keywords)]
    assert unsaid == []
