import os
import subprocess

import pytest

from sessiondag import Call
from sessiondag.store import SessionStore

from . import git_servers

TRANSPORTS = ("path", "file", "git", "http", "ssh", "scp")


@pytest.fixture(params=TRANSPORTS)
def remote_url(request, tmp_path, monkeypatch):
    """A remote repository for sessions behind each transport (a real server on 127.0.0.1)."""
    kind = request.param
    base = str(tmp_path / f"srv-{kind}")
    os.makedirs(base)
    if kind in ("path", "file"):
        repo = git_servers.bare_repo(os.path.join(base, "sessions.git"))
        yield (repo if kind == "path" else "file://" + repo), repo
        return
    if kind == "git":
        srv = git_servers.git_daemon(base)
    elif kind == "http":
        srv = git_servers.http_server(base)
    else:
        srv, env = git_servers.ssh_server(base)
        cmd = env["GIT_SSH_COMMAND"] + (f" -p {srv.port}" if kind == "scp" else "")
        monkeypatch.setenv("GIT_SSH_COMMAND", cmd)
    try:
        yield (srv.scp if kind == "scp" else srv.url), srv.repo
    finally:
        srv.close()


def store_at(path) -> SessionStore:
    return SessionStore(str(path))


def add_turn(s, text: str, *, reply: str = "ok", head: str | None = None, tool_output=None):
    """One user turn: user → llm (→ a code node with `tool_output`), committed."""
    head = head if head is not None else s.head_id
    u = s.append(Call("user", "alice", output=text, predecessor=head))
    last = u
    if tool_output is not None:
        t = s.append(Call("code", "shell", input={"cmd": "env"}, output=tool_output, caller=u.id))
        last = t
    llm = s.append(Call("llm", "model-x", output=reply, caller=u.id, predecessor=u.id,
                        metadata={"gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 2}))
    s.commit_turn()
    return u, llm, last


def make_session(store, sid: str, wd: str, turns: int = 2, **kw):
    store.open_session(sid, working_dir=wd)
    s = store.session(sid)
    for i in range(turns):
        add_turn(s, f"turn {i} of {sid}", **kw)
    return s


def shape(store, sid):
    """What a person sees: every branch, tip to root, as (id, role, name, output, status)."""
    s = store.session(sid)
    out = {}
    for b in s.list_branches():
        out[b.head_id] = [(c.id, c.role, c.name, c.output, c.status) for c in s.get_branch(b.head_id)]
    return out


def fsck(git_dir: str) -> None:
    r = subprocess.run(["git", "-C", git_dir, "fsck", "--strict"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
    bad = [line for line in (r.stdout + r.stderr).splitlines()
           if line and not line.startswith(("dangling", "notice", "Checking"))]
    assert not bad, bad


def disk_state(path: str) -> dict:
    """Every file under a session dir with its bytes (what 'nothing local changed' compares)."""
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


def remote_refs(repo: str) -> str:
    return subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True, check=True).stdout
