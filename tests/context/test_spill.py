from sessiondag import Call, ROOT
from sessiondag.context.messages import render_messages
from sessiondag.store.spill import PREVIEW_CHARS


def _turn_with_big_result(s, body):
    u = s.append(Call("user", "alice", output="read it", predecessor=s.head_id if s.head_id != ROOT else ROOT))
    l1 = s.append(Call("llm", "model-x", output=None, caller=u.id, predecessor=u.id))
    t = s.append(Call("code", "read", input={"p": "f"}, output=body, caller=l1.id, predecessor=l1.id,
                      metadata={"tool_call_id": "r1"}))
    return t


def test_spill_on_write_renders_preview_and_reference(session_with):
    session = session_with({"SESSIONDAG_NODE_SPILL": "1000"})
    body = "".join(f"line {i}\n" for i in range(2000))
    t = _turn_with_big_result(session, body)
    stored = session.get_node(t.id).output
    assert stored["size"] == len(body.encode()) and stored["preview"] == body[:PREVIEW_CHARS]
    assert session.full_value(stored) == body
    msgs, m = render_messages(session)
    tool = [x for x in msgs if x["role"] == "tool"][0]["content"]
    assert tool.startswith(body[:PREVIEW_CHARS]) and stored["$blob"] in tool and len(tool) < len(body)
    assert m["spilled"] == [t.id]
    # deterministic: the same body spills to the same blob with the same preview
    t2 = _turn_with_big_result(session, body)
    assert session.get_node(t2.id).output == stored


def test_spill_off_keeps_the_body_inline(session_with):
    session = session_with({"SESSIONDAG_NODE_SPILL": "off"})
    body = "z" * 100_000
    t = _turn_with_big_result(session, body)
    assert session.get_node(t.id).output == body
    msgs, m = render_messages(session)
    assert [x for x in msgs if x["role"] == "tool"][0]["content"] == body and m["spilled"] == []


def test_spill_on_update_of_a_running_node(session_with):
    session = session_with({"SESSIONDAG_NODE_SPILL": "100"})
    t = _turn_with_big_result(session, None)
    msgs, _ = render_messages(session)  # renders (and caches) the pending result
    assert [x for x in msgs if x["role"] == "tool"][0]["content"] == ""
    session.update(t.id, output="q" * 500)
    msgs, m = render_messages(session)
    tool = [x for x in msgs if x["role"] == "tool"][0]["content"]
    assert tool.startswith("q" * 100) and "preview only" in tool and m["spilled"] == [t.id]


def test_a_spilled_system_prompt_ships_in_full(session_with):
    from sessiondag.context.system_prompt import record_system_prompt
    session = session_with({"SESSIONDAG_NODE_SPILL": "200"})
    text = "You are careful.\n" + "tool description line\n" * 100
    p = record_system_prompt(session, text)
    assert session.get_node(p.id).output["$blob"]  # stored by reference
    session.append(Call("user", "alice", output="hi", predecessor=p.id))
    for _ in range(2):  # the second time from the cache
        msgs, _ = render_messages(session)
        assert msgs[0] == {"role": "system", "content": text}
    assert record_system_prompt(session, text) is None  # same hash: not recorded again
