import base64

import pytest

from sessiondag import Call, ROOT
from sessiondag.context.attachments import attach
from sessiondag.context.graphinfo import RenderError
from sessiondag.context.messages import render_messages
from sessiondag.store import SessionStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def test_same_file_twice_is_stored_once_and_survives_reopen(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    a = attach(s, PNG, media_type="image/png", name="a.png")
    b = attach(s, PNG, media_type="image/png", name="copy.png")
    assert a["$blob"] == b["$blob"] and a["size"] == len(PNG) and a["type"] == "image"
    objs = [sha for sha in s.git.repo.object_store if s.git.repo.object_store[sha].type_name == b"blob"
            and s.git.repo.object_store[sha].data == PNG]
    assert len(objs) == 1
    u = s.append(Call("user", "alice", output=[{"type": "text", "text": "look"}, a], predecessor=ROOT))
    u2 = s.append(Call("user", "alice", output=[b], predecessor=u.id))
    s.commit_turn()
    sid = s.id
    store.close()

    store2 = SessionStore(tmp_path / "state")
    s2 = store2.session(sid)
    msgs, _ = render_messages(s2, u2.id, format="openai")
    data = base64.b64encode(PNG).decode()
    assert msgs == [
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]},
    ]
    amsgs, _ = render_messages(s2, u2.id, format="anthropic")
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    assert amsgs == [{"role": "user", "content": [{"type": "text", "text": "look"}, img, img]}]
    store2.close()


def test_text_and_pdf_files(session):
    t = attach(session, b"print('x')\n", media_type="text/x-python", name="x.py")
    p = attach(session, b"%PDF-1.4 fake", media_type="application/pdf", name="doc.pdf")
    z = attach(session, b"\x00\x01", media_type="application/octet-stream", name="z.bin")
    assert t["type"] == p["type"] == "file"
    u = session.append(Call("user", "alice", output=[t, p, z], predecessor=ROOT))
    msgs, _ = render_messages(session, u.id, format="anthropic")
    blocks = msgs[0]["content"]
    assert blocks[0] == {"type": "text", "text": "<file name='x.py' media_type='text/x-python'>\nprint('x')\n\n</file>"}
    assert blocks[1] == {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                        "data": base64.b64encode(b"%PDF-1.4 fake").decode()}}
    assert blocks[2]["text"].startswith("[file z.bin (application/octet-stream, 2 bytes)]")
    omsgs, _ = render_messages(session, u.id, format="openai")
    assert omsgs[0]["content"][1]["type"] == "file"


def test_missing_attachment_body_raises(session):
    ghost = {"type": "image", "$blob": "0" * 40, "media_type": "image/png", "name": "g.png", "size": 3}
    u = session.append(Call("user", "alice", output=[ghost], predecessor=ROOT))
    with pytest.raises(RenderError):
        render_messages(session, u.id)


def test_attach_rejects_bad_input(session):
    with pytest.raises(ValueError):
        attach(session, "text", media_type="text/plain", name="a")
    with pytest.raises(ValueError):
        attach(session, b"x", media_type="plain", name="a")
