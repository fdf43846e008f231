"""Session handles: every SessionResumeError reason from real damaged or foreign sessions."""

import glob
import os

import orjson
import pytest

from sessiondag import Call, ROOT
from sessiondag.core.errors import InvalidSessionIdError, SessionExistsError, SessionResumeError
from sessiondag.store import SessionStore
from store_helpers import tree_digest


@pytest.fixture
def made(tmp_path):
    """A committed session with a journal tail, then the store closed: (state, work, path)."""
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    store = SessionStore(state)
    store.start_session("victim", working_dir=work)
    s = store.session("victim")
    prev = ROOT
    for i in range(6):
        prev = s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"message {i}", predecessor=prev)).id
        if i % 2:
            s.commit_turn()
    s.append(Call("user", "m", output="uncommitted tail", predecessor=prev))
    store.close()
    return state, work, s.path


def resume_fails(state, work, reason, **kw):
    path = os.path.join(state, "sessions", "victim")
    before = tree_digest(state)
    store = SessionStore(state)
    with pytest.raises(SessionResumeError) as ei:
        store.resume_session("victim", working_dir=work, **kw)
    store.close()
    assert ei.value.reason == reason, ei.value
    assert ei.value.should_clear_handle == (reason != "working_dir_mismatch")
    assert ei.value.data()["reason"] == reason
    assert tree_digest(state) == before, "a failed resume changed files"
    assert not os.path.exists(path) or os.path.isdir(path)
    return ei.value


def test_resume_ok_and_fresh_store_sees_everything(made):
    state, work, path = made
    store = SessionStore(state)
    h = store.resume_session("victim", working_dir=work)
    assert h.id == "victim" and h.path == path and h.working_dir == os.path.realpath(work)
    assert len(store.session("victim").get_branch()) == 7
    store.close()


def test_missing(tmp_path):
    state = tmp_path / "state"
    SessionStore(state)
    resume_fails(state, tmp_path, "missing")


def _rewrite(path, fn):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(fn(data))


def _packs(path):
    return sorted(glob.glob(os.path.join(path, "git", "objects", "pack", "*.pack")))


def _meta_offset(path):
    store = SessionStore(os.path.dirname(os.path.dirname(path)))
    s = store.session("victim")
    off = s.git.load_meta(s.git.head())[0]["journal"]["offset"]
    store.close()
    return off


CORRUPTIONS = {
    "session_json_truncated": lambda p: _rewrite(os.path.join(p, "session.json"), lambda d: d[: len(d) // 2]),
    "session_json_not_object": lambda p: _rewrite(os.path.join(p, "session.json"), lambda d: b"[1, 2]"),
    "session_json_other_id": lambda p: _rewrite(
        os.path.join(p, "session.json"), lambda d: d.replace(b'"victim"', b'"someone-else"')),
    # (session.json or the journal missing beside a complete repository: rebuilt, test_rebuild.py)
    "everything_but_git_deleted": lambda p: [os.unlink(os.path.join(p, f)) for f in ("session.json", "journal.log")]
    and [os.unlink(pk) for pk in _packs(p)],
    "journal_header_garbage": lambda p: _rewrite(os.path.join(p, "journal.log"), lambda d: b"\x00garbage" + d[9:]),
    "journal_garbage_record": lambda p: _rewrite(
        os.path.join(p, "journal.log"), lambda d: d.replace(b"message 5", b'message 5"}}}\n{not json', 1)),
    "journal_truncated_in_the_middle": lambda p: _rewrite(
        os.path.join(p, "journal.log"), lambda d, off=_meta_offset(p): d[: off - 40]),
    "pack_garbage": lambda p: [_rewrite(pk, lambda d: d[:12] + os.urandom(len(d) - 32) + d[-20:]) for pk in _packs(p)],
    "pack_deleted": lambda p: [os.unlink(pk) for pk in _packs(p)],
    "ref_target_missing": lambda p: _rewrite(os.path.join(p, "git", "refs", "heads", "main"), lambda d: b"1" * 40 + b"\n"),
    "ref_garbage": lambda p: _rewrite(os.path.join(p, "git", "refs", "heads", "main"), lambda d: b"not a sha\n"),
    "ref_points_at_a_blob": lambda p: _point_ref_at_garbage_loose(p),
    "meta_json_unreadable": lambda p: _commit_with_bad_meta(p),
    "meta_usage_total_short": lambda p: _commit_with_meta(p, usage_total=[]),
    "meta_usage_previous_short": lambda p: _commit_with_meta(p, usage_previous=[1]),
}


def _point_ref_at_garbage_loose(p):
    # a loose object whose bytes are not zlib data
    sha = "ab" + "c" * 38
    os.makedirs(os.path.join(p, "git", "objects", "ab"), exist_ok=True)
    with open(os.path.join(p, "git", "objects", "ab", sha[2:]), "wb") as f:
        f.write(b"this is not a git object")
    _rewrite(os.path.join(p, "git", "refs", "heads", "main"), lambda d: sha.encode() + b"\n")


def _commit_with_meta(p, **changed):
    """A commit of the same snapshot whose meta.json has `changed` keys (a list cut short: an
    index out of range when it is read)."""
    import orjson
    from dulwich.objects import Blob, Tree
    from dulwich.repo import Repo
    repo = Repo(os.path.join(p, "git"))
    head = repo[repo.refs[b"refs/heads/main"]]
    tree = repo[head.tree]
    blob = Blob.from_string(orjson.dumps(orjson.loads(repo[tree[b"meta.json"][1]].data) | changed))
    new = Tree()
    for e in tree.items():
        new[e.path] = (e.mode, blob.id if e.path == b"meta.json" else e.sha)
    _commit_on_main(repo, new, head.id, b"short\n", blob)


def _commit_with_bad_meta(p):
    from dulwich.objects import Blob, Tree
    from dulwich.repo import Repo
    repo = Repo(os.path.join(p, "git"))
    blob = Blob.from_string(b"{not json")
    tree = Tree()
    tree[b"meta.json"] = (0o100644, blob.id)
    _commit_on_main(repo, tree, repo.refs[b"refs/heads/main"], b"bad\n", blob)


def _commit_on_main(repo, tree, parent, message, *objects):
    """A commit of `tree` (and `objects`) on `parent`, made main's head; the repo closed."""
    from dulwich.objects import Commit
    c = Commit()
    c.tree, c.parents = tree.id, [parent]
    c.author = c.committer = b"t <t@t>"
    c.author_time = c.commit_time = 0
    c.author_timezone = c.commit_timezone = 0
    c.message = message
    for o in (*objects, tree, c):
        repo.object_store.add_object(o)
    repo.refs[b"refs/heads/main"] = c.id
    repo.close()


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_corrupt(made, damage):
    state, work, path = made
    CORRUPTIONS[damage](path)
    err = resume_fails(state, work, "corrupt")
    assert err.should_clear_handle
    # from another working dir too: the damage is what the caller must act on (a spent handle)
    assert resume_fails(state, os.path.dirname(work), "corrupt").should_clear_handle
    assert resume_fails(state, None, "corrupt").should_clear_handle
    store = SessionStore(state)  # session() and open_session() refuse the same way
    with pytest.raises(SessionResumeError) as ei:
        store.session("victim")
    assert ei.value.reason == "corrupt"
    with pytest.raises(SessionResumeError):
        store.open_session("victim", working_dir=work)
    store.close()


@pytest.mark.parametrize("version", [0, 2, 999, None, "1"])
def test_schema_mismatch(made, version):
    state, work, path = made
    f = os.path.join(path, "session.json")
    info = orjson.loads(open(f, "rb").read())
    if version is None:
        del info["schema_version"]
    else:
        info["schema_version"] = version
    open(f, "wb").write(orjson.dumps(info))
    resume_fails(state, work, "schema_mismatch")


def test_working_dir_mismatch_other_dir(made, tmp_path):
    state, work, path = made
    other = tmp_path / "elsewhere"
    other.mkdir()
    err = resume_fails(state, other, "working_dir_mismatch")
    assert not err.should_clear_handle
    resume_fails(state, None, "working_dir_mismatch")
    store = SessionStore(state)
    h = store.resume_session("victim", working_dir=other, allow_working_dir_mismatch=True)
    assert h.working_dir == os.path.realpath(work)  # the recorded dir is not rewritten
    store.close()


def test_working_dir_symlink_is_the_same_dir(made, tmp_path):
    state, work, path = made
    link = tmp_path / "link"
    link.symlink_to(work)
    store = SessionStore(state)
    assert store.resume_session("victim", working_dir=link).id == "victim"
    store.close()


def test_recorded_null_dir_needs_opt_in(tmp_path):
    state = tmp_path / "state"
    store = SessionStore(state)
    store.start_session("victim", working_dir=None)
    store.close()
    err = resume_fails(state, tmp_path, "working_dir_mismatch")
    assert not err.should_clear_handle
    resume_fails(state, None, "working_dir_mismatch")
    store = SessionStore(state)
    assert store.resume_session("victim", working_dir=None, allow_working_dir_mismatch=True).working_dir is None
    store.close()


def test_start_refuses_existing_id(made):
    state, work, path = made
    before = tree_digest(state)
    store = SessionStore(state)
    with pytest.raises(SessionExistsError) as ei:
        store.start_session("victim", working_dir=work)
    assert "resume" in str(ei.value) and "reset" in str(ei.value)
    store.close()
    assert tree_digest(state) == before


def test_open_session_semantics(tmp_path):
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    store = SessionStore(state)
    h1 = store.open_session(None, working_dir=work)           # none: a new minted id
    h2 = store.open_session(None, working_dir=work)
    assert h1.id != h2.id and h1.id.startswith("s-")
    h3 = store.open_session("task-1-planner", working_dir=work)  # id: created under it
    assert h3.id == "task-1-planner" and h3.head_id == ROOT
    s = store.session("task-1-planner")
    u = s.append(Call("user", "u", output="hi", predecessor=ROOT))
    store.close()
    store = SessionStore(state)
    h4 = store.open_session("task-1-planner", working_dir=work)  # id exists: reused
    assert h4.id == "task-1-planner" and h4.head_id == u.id
    with pytest.raises(SessionResumeError) as ei:                # reuse still checks the dir
        store.open_session("task-1-planner", working_dir=tmp_path)
    assert ei.value.reason == "working_dir_mismatch"
    with pytest.raises(InvalidSessionIdError):
        store.open_session("../escape", working_dir=work)
    assert not os.path.exists(tmp_path / "escape")
    ids = [d["session_id"] for d in store.list_sessions(working_dir=work)]
    assert sorted(ids) == sorted([h1.id, h2.id, "task-1-planner"])
    assert store.list_sessions(working_dir=tmp_path) == []
    store.close()


def test_reset_session(made):
    state, work, path = made
    store = SessionStore(state)
    store.session("victim")
    assert store.reset_session("victim") is True
    assert not os.path.exists(path)
    assert store.reset_session("victim") is False
    with pytest.raises(SessionResumeError) as ei:
        store.resume_session("victim", working_dir=work)
    assert ei.value.reason == "missing"
    h = store.start_session("victim", working_dir=work)  # the id is free again
    assert h.head_id == ROOT
    assert [x for x in os.listdir(os.path.join(state, "sessions")) if x.startswith(".")] == []
    store.close()


@pytest.mark.parametrize("sid", ["", "..", "a/b", "a:b", "a\x00b", ".x", "x" * 129])
def test_every_entry_point_checks_ids(tmp_path, sid):
    store = SessionStore(tmp_path / "state")
    for fn in (lambda: store.start_session(sid, working_dir=tmp_path),
               lambda: store.resume_session(sid, working_dir=tmp_path),
               lambda: store.open_session(sid, working_dir=tmp_path),
               lambda: store.reset_session(sid), lambda: store.session(sid)):
        with pytest.raises(InvalidSessionIdError):
            fn()
    assert os.listdir(tmp_path / "state" / "sessions") == []
    store.close()


def test_opted_in_resume_follows_a_renamed_dir(made, tmp_path):
    state, work, path = made
    renamed = tmp_path / "renamed"
    os.rename(work, renamed)
    store = SessionStore(state)
    h = store.resume_session("victim", working_dir=renamed, allow_working_dir_mismatch=True)
    assert h.working_dir == os.path.realpath(renamed)  # moved: recorded as a rebind
    s = store.session("victim")
    assert [(x["from"], x["to"]) for x in s.graph.extra["working_dir_rebinds"]] == \
        [(os.path.realpath(work), os.path.realpath(renamed))]
    assert store.resume_session("victim", working_dir=renamed).id == "victim"  # no opt-in needed now
    store.close()
