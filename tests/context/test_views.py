from sessiondag import Call, ROOT
from sessiondag.context.views import call_tree, chat_stream

from .harness import build


def test_chat_stream_folds_nesting_and_hides_context_nodes(session):
    names = build(session, [
        {"op": "system_prompt", "text": "p", "as": "p"},
        {"id": "u1", "role": "user", "out": "hi", "pred": "p"},
        {"id": "l1", "role": "llm", "out": None, "caller": "u1", "pred": "u1",
         "metadata": {"gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 2}},
        {"id": "t1", "role": "code", "name": "ls", "out": "x", "caller": "l1", "pred": "l1", "tcid": "c1"},
        {"id": "l2", "role": "llm", "out": "done", "caller": "u1", "pred": "t1"},
        {"id": "u2", "role": "user", "out": "more", "pred": "l2"},
        {"id": "l3", "role": "llm", "out": "ok", "caller": "u2", "pred": "u2"},
        {"op": "compact", "covers": ["u1", "l1", "t1", "l2"], "summary": "said hi", "as": "S"},
    ])
    rows = chat_stream(session)
    assert [r["id"] for r in rows] == [names["S"], "u1", "l1", "l2", "u2", "l3"]
    assert rows[0]["covers_ids"] == ["u1", "l1", "t1", "l2"] and rows[0]["text"] == "said hi"
    assert rows[1]["compacted"] and "compacted" not in rows[4]
    assert rows[2]["calls"] == [{"id": "t1", "name": "ls", "status": "completed"}]
    assert rows[2]["usage"] == {"input_tokens": 7, "output_tokens": 2}


def test_call_tree_folds_loop_siblings_and_keeps_ids(session):
    build(session, [
        {"id": "u1", "role": "user", "out": "loop", "pred": ROOT},
        {"id": "f", "role": "code", "name": "agent", "caller": "u1", "status": "running"},
    ])
    ids = []
    for k in range(3):
        step = session.append(Call("code", "step", input=k, output=k, caller="f"))
        session.append(Call("llm", "model-x", input="think", output=str(k), caller=step.id))
        ids.append(step.id)
    session.append(Call("code", "report", caller="f", output="r"))
    tree = call_tree(session)
    u = tree["children"][0]
    assert u["id"] == "u1"
    f = u["children"][0]
    loop, report = f["children"]
    assert loop["count"] == 3 and loop["ids"] == ids and loop["name"] == "step"
    assert [it["children"][0]["role"] for it in loop["items"]] == ["llm"] * 3
    assert report["name"] == "report" and "count" not in report
    assert call_tree(session, "f")["id"] == "f"
