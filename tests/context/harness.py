"""Build session graphs from fixture steps through the real store, and render them."""

from __future__ import annotations

from typing import Any

from sessiondag import Call, ROOT
from sessiondag.context.compaction import compact
from sessiondag.context.system_prompt import record_system_prompt
from sessiondag.context.aging import advance_aging
from sessiondag.store import SessionStore

DEFAULT_NAMES = {"user": "alice", "llm": "model-x"}


def new_session(state_dir) -> Any:
    store = SessionStore(state_dir, commit_hooks=(advance_aging,))  # as the runtime and the daemon install it
    h = store.open_session(None, working_dir=None)
    return store, store.session(h.id)


def build(session: Any, steps: list[dict[str, Any]], monkeypatch=None) -> dict[str, str]:
    """Apply fixture steps; returns symbolic name -> node id (node steps use the name as the id)."""
    names: dict[str, str] = {ROOT: ROOT}

    def ref(x):
        return None if x is None else names.get(x, x)

    for st in steps:
        op = st.get("op", "node")
        if op == "node":
            role = st["role"]
            md = dict(st.get("metadata") or {})
            if "tcid" in st:
                md["tool_call_id"] = st["tcid"]
            if "expose" in st:
                md["expose"] = st["expose"]
            pred = st.get("pred")
            c = Call(role, st.get("name", DEFAULT_NAMES.get(role, st["id"])), id=st["id"],
                     input=st.get("input"), output=st.get("out"), status=st.get("status", "completed"),
                     caller=ref(st.get("caller", ROOT)), predecessor=ref(pred), metadata=md)
            session.append(c)
            names[st["id"]] = c.id
        elif op == "spawn":
            names[st["as"]] = session.spawn_branch(ref(st["caller"]), source=st.get("source", "task"),
                                                   content=st.get("content"))
        elif op == "checkout":
            session.checkout(ref(st["id"]))
        elif op == "compact":
            names[st["as"]] = compact(session, [ref(i) for i in st["covers"]], st["summary"]).id
        elif op == "system_prompt":
            c = record_system_prompt(session, st["text"])
            if "as" in st:
                assert c is not None
                names[st["as"]] = c.id
        elif op == "update":
            kw = {k: st[k] for k in ("output", "status", "metadata") if k in st}
            session.update(ref(st["id"]), **kw)
        elif op == "commit":
            session.commit_turn()
        elif op == "env":
            for k, v in st["vars"].items():
                if v is None:
                    monkeypatch.delenv(k, raising=False)
                else:
                    monkeypatch.setenv(k, str(v))
        else:
            raise AssertionError(f"unknown fixture op {op!r}")
    return names


def chat(session: Any, turns: int, *, tools_per_turn: int = 1, result: str = "r") -> list[str]:
    """Append `turns` user/llm/tool/llm turns at HEAD; returns the final llm ids of each turn."""
    out = []
    for k in range(turns):
        u = session.append(Call("user", "alice", output=f"q{k}", predecessor=session.head_id))
        l1 = session.append(Call("llm", "model-x", output=f"thinking {k}", caller=u.id, predecessor=u.id))
        prev = l1.id
        for j in range(tools_per_turn):
            t = session.append(Call("code", "grep", input={"q": k, "j": j}, output=f"{result}{k}.{j}" * 1,
                                    caller=l1.id, predecessor=prev,
                                    metadata={"tool_call_id": f"call_{k}_{j}"}))
            prev = t.id
        l2 = session.append(Call("llm", "model-x", output=f"answer {k}", caller=u.id, predecessor=prev))
        out.append(l2.id)
    return out


def commit_chat_turns(session: Any, n: int) -> None:
    """`n` one-tool chat turns, each committed (every commit runs the store's commit hooks)."""
    for _ in range(n):
        chat(session, 1)
        assert session.commit_turn() is not None


def aged_to_the_last_turn(session: Any) -> bool:
    """With a tail of one turn: did the aging boundary move to the last user turn?"""
    from sessiondag.context.aging import AGED_KEY
    users = [c for c in session.get_branch() if c.role == "user"]
    return session.graph.extra.get(AGED_KEY) == users[-1].seq
