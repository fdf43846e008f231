"""Refusals of a push or pull: each typed, nothing changed locally (nor on the remote)."""

import os

import pytest

from sessiondag import Call

from sessiondag.core.settings import Settings
from sessiondag.sync import listing, pull, push, remotes
from sessiondag.sync.errors import (ObjectTooLargeError, RemoteAuthError, RemoteUnreachableError,
                                    SecretInSessionError)

from . import git_servers
from .conftest import add_turn, disk_state, make_session, remote_refs, store_at

FAKE_OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


@pytest.fixture
def one(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a = store_at(tmp_path / "a")
    s = make_session(a, "s", wd, turns=1)
    yield a, s, repo, remotes.resolve(a.state_dir, repo)
    a.close()


def _unchanged(s, repo):
    return disk_state(s.path), remote_refs(repo)


def test_unreachable_remote(one, tmp_path):
    a, s, repo, _ = one
    for url in (f"git://127.0.0.1:{git_servers.free_port()}/sessions.git", str(tmp_path / "no-such.git"),
                f"http://127.0.0.1:{git_servers.free_port()}/sessions.git"):
        before = _unchanged(s, repo)
        r = remotes.resolve(a.state_dir, url)
        for call in (lambda: push.push(a, r, "s", Settings()), lambda: pull.pull(a, r, "s"),
                     lambda: listing.list_remote(r)):
            with pytest.raises(RemoteUnreachableError) as e:
                call()
            assert e.value.code == "sync_unreachable" and e.value.data()["url"] == url
        assert _unchanged(s, repo) == before


def test_bad_credentials_http(one, tmp_path, monkeypatch):
    a, s, _, _ = one
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))   # no helper of the machine
    srv = git_servers.http_server(str(tmp_path / "http"), auth="alice:right")
    try:
        before = _unchanged(s, srv.repo)
        host = srv.url.split("//", 1)[1]
        for url in (srv.url, f"http://alice:wrong@{host}"):
            with pytest.raises(RemoteAuthError) as e:
                push.push(a, remotes.resolve(a.state_dir, url), "s", Settings())
            assert e.value.code == "sync_auth_failed"
        assert _unchanged(s, srv.repo) == before
        # the usual git ways work: in the URL, then through a credential helper
        assert push.push(a, remotes.resolve(a.state_dir, f"http://alice:right@{host}"), "s",
                         Settings())["status"] == "pushed"
        add_turn(s, "one more")
        store_file = tmp_path / "creds"
        store_file.write_text(f"http://alice:right@{host.split('/')[0]}\n")
        (tmp_path / "gitconfig").write_text(f"[credential]\n\thelper = store --file {store_file}\n")
        assert push.push(a, remotes.resolve(a.state_dir, srv.url), "s", Settings())["status"] == "pushed"
    finally:
        srv.close()


def test_bad_credentials_ssh(one, tmp_path, monkeypatch):
    a, s, _, _ = one
    srv, env = git_servers.ssh_server(str(tmp_path / "ssh"))
    try:
        monkeypatch.setenv("GIT_SSH_COMMAND", env["GIT_SSH_COMMAND"].replace("/client ", "/stranger "))
        before = _unchanged(s, srv.repo)
        with pytest.raises(RemoteAuthError) as e:
            push.push(a, remotes.resolve(a.state_dir, srv.url), "s", Settings())
        assert e.value.code == "sync_auth_failed"
        assert _unchanged(s, srv.repo) == before
    finally:
        srv.close()


def test_secret_in_a_tool_output(one):
    a, s, repo, r = one
    _, _, tool = add_turn(s, "show me the env", tool_output=f"HOME=/root\nOPENAI_API_KEY={FAKE_OPENAI}\n")
    before = _unchanged(s, repo)
    with pytest.raises(SecretInSessionError) as e:
        push.push(a, r, "s", Settings())
    assert e.value.code == "secret_in_session"
    assert e.value.data()["node_id"] == tool.id and e.value.data()["field"] == "output"
    assert _unchanged(s, repo) == before
    assert push.push(a, r, "s", Settings(), allow_secrets=True)["status"] == "pushed"


def test_the_configured_key_itself(one):
    a, s, repo, r = one
    key = "plain-looking-key-7c1f00d2"          # no token shape: found because it is the configured key
    u, _, _ = add_turn(s, f"my key is {key}")
    before = _unchanged(s, repo)
    with pytest.raises(SecretInSessionError) as e:
        push.push(a, r, "s", Settings(anthropic_api_key=key))
    assert e.value.data()["node_id"] == u.id and e.value.data()["field"] == "output"
    assert _unchanged(s, repo) == before
    assert push.push(a, r, "s", Settings())["status"] == "pushed"   # not a secret to a process without it


def test_over_size_objects(one):
    a, s, repo, r = one
    _, _, big = add_turn(s, "a big result", tool_output="x" * 5000)
    before = _unchanged(s, repo)
    with pytest.raises(ObjectTooLargeError) as e:
        push.push(a, r, "s", Settings(max_object_bytes=4000))
    assert e.value.code == "sync_object_too_large" and e.value.data()["node_id"] == big.id
    _, _, spilled = add_turn(s, "a bigger one", tool_output="y" * 60000)   # spilled into its own blob
    before = _unchanged(s, repo)
    with pytest.raises(ObjectTooLargeError) as e:
        push.push(a, r, "s", Settings(max_object_bytes=50000))
    assert e.value.data()["node_id"] == spilled.id
    assert _unchanged(s, repo) == before


def test_dry_run_lists_and_sends_nothing(one):
    a, s, repo, r = one
    before = _unchanged(s, repo)
    got = push.push(a, r, "s", Settings(), dry_run=True)
    assert got["status"] == "dry_run" and got["objects"] == len(got["sent"]) > 0
    assert got["bytes"] == sum(o["size"] for o in got["sent"])
    assert {"commit", "chunk", "meta", "index", "tree"} <= {o["kind"] for o in got["sent"]}
    assert _unchanged(s, repo) == before


def test_a_key_the_json_text_escapes_is_still_found(one):
    a, s, repo, r = one
    key = 'k3y"with\\quotes-0042'                # stored escaped in the chunk's JSON text
    u, _, _ = add_turn(s, f"the key: {key}")
    with pytest.raises(SecretInSessionError) as e:
        push.push(a, r, "s", Settings(openai_api_key=key))
    assert e.value.data()["node_id"] == u.id


FAKE_GITHUB = "ghp_" + "Zq7Kx2Wm9Pt4Rv6Ys1Lb8Nc3Hd5Jf0Ga2TeQ4"


@pytest.mark.parametrize("name", ["config.json", "notes.jsonl", "meta.json", ".env", "deploy/key.txt"])
def test_a_secret_in_a_workspace_snapshot_is_refused(tmp_path, name):
    """A turn's workspace checkpoint goes with its commit: a token in a working-dir file (not
    ignored) is refused like one in a node, named by its path and the turn that snapshotted it,
    whatever the file's name (a name like a chunk's or meta.json's is not taken for one)."""
    from sessiondag.workspace.checkpointer import install
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = tmp_path / "wd"
    (wd / "deploy").mkdir(parents=True)
    (wd / "readme.txt").write_text("nothing to hide\n")
    a = store_at(tmp_path / "a")
    install(a)
    try:
        a.open_session("s", working_dir=str(wd))
        s = a.session("s")
        add_turn(s, "a first turn")
        r = remotes.resolve(a.state_dir, repo)
        assert push.push(a, r, "s", Settings())["status"] == "pushed"
        (wd / name).write_text(f"TOKEN={FAKE_GITHUB}\n")
        u = s.append(Call("user", "alice", output="write the token", predecessor=s.head_id))
        s.append(Call("llm", "model-x", output="done", caller=u.id, predecessor=u.id))
        s.commit_turn(checkpoint=True)
        assert s.graph.get(u.id).metadata["checkpoint"]["id"]
        before = _unchanged(s, repo)
        with pytest.raises(SecretInSessionError) as e:
            push.push(a, r, "s", Settings())
        d = e.value.data()
        assert d["field"] == f"workspace file {name}" and d["node_id"] == u.id and d["shape"] == "GitHub token"
        assert _unchanged(s, repo) == before
        got = push.push(a, r, "s", Settings(), dry_run=True, allow_secrets=True)
        assert {"kind": "workspace", "name": name} in [{k: o[k] for k in ("kind", "name")} for o in got["sent"]]
        assert push.push(a, r, "s", Settings(), allow_secrets=True)["status"] == "pushed"
    finally:
        a.close()


def test_the_prefilter_covers_every_token_shape():
    """A text with none of the trigger literals is passed without the shapes' literals being
    searched: each of those must contain a trigger, or a token would slip through."""
    from sessiondag.sync import checks
    for name, literals, _pattern in checks.TOKEN_SHAPES:
        for lit in literals:
            assert any(t in lit for t in checks._TRIGGERS), (name, lit)
