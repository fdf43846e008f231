"""`sessiondag view`: the viewer live against the daemon. A real `view` process (it starts the daemon),
a real Chromium opening its one-time URL, a turn run by `sessiondag run` through the daemon showing up
in the open page; the token and the cookie it turns into are required, on the loopback address only."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
from urllib.parse import urlsplit

import pytest

from held_model import HeldModel
from report_support import CLI, first_turn, sd


def get(port: int, path: str, host: str | None = None, cookie: str | None = None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": host or f"127.0.0.1:{port}"}
    if cookie:
        headers["Cookie"] = cookie
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, dict(r.getheaders()), body


@contextlib.contextmanager
def start_view(tmp_path, extra_env=None):
    """A session with one turn, and a `view` process on it (it starts the daemon with `extra_env`)."""
    home, wd, sid = first_turn(tmp_path, "the first answer", "first task")
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, SESSIONDAG_HOME=str(home), XDG_RUNTIME_DIR=str(runtime),
               XDG_CONFIG_HOME=str(tmp_path / "config"), **(extra_env or {}))
    proc = subprocess.Popen(CLI + ["view", "--state-dir", str(home), sid, "--no-browser"], cwd=wd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()      # printed once the daemon subscription is up
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        yield {"home": home, "wd": wd, "sid": sid, "url": url, "port": urlsplit(url).port, "proc": proc,
               "env": env, "tmp": tmp_path}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
        subprocess.run(CLI + ["daemon", "stop", "--state-dir", str(home)], env=env, capture_output=True, timeout=60)
    assert code == 0


@pytest.fixture
def viewing(tmp_path):
    with start_view(tmp_path) as v:
        yield v


def test_the_token_is_required_once_and_only_on_loopback(viewing):
    port, token = viewing["port"], urlsplit(viewing["url"]).query
    for path in ("/", "/doc", "/chunk/0", "/events", "/?token=wrong"):
        status, _, _ = get(port, path)
        assert status == 401, path
    assert get(port, "/?" + token, host=f"evil.example:{port}")[0] == 403          # DNS rebinding
    status, headers, _ = get(port, "/?" + token)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    assert get(port, "/?" + token)[0] == 401                                        # one time
    assert get(port, "/doc", cookie="sdview=forged")[0] == 401
    status, _, body = get(port, "/doc", cookie=cookie)
    assert status == 200 and json.loads(body)["meta"]["session_id"] == viewing["sid"]
    status, _, body = get(port, "/", cookie=cookie)
    assert status == 200 and b"connect-src 'self'" in body and b'id="sd-live"' in body
    assert get(port, "/events", cookie=cookie)[0] == 400                           # since what?
    # a page (or an EventSource reconnecting) that saw version V gets the patches after V, with ids
    version = json.loads(get(port, "/doc", cookie=cookie)[2])["version"]
    script = viewing["tmp"] / "more.json"
    script.write_text(json.dumps([{"text": "more words"}]))
    sd(["run", "--state-dir", viewing["home"], "--session", viewing["sid"], "--provider", "scripted", "--script",
        script, "more"], home=viewing["home"], cwd=viewing["wd"])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/events?since=0", headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie,
                                                "Last-Event-ID": str(version)})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    lines = []
    while not any("more words" in x for x in lines):
        line = r.fp.readline().decode()    # the socket's timeout bounds a stall; an end is an end
        assert line, f"the event stream ended before the new turn's text came: {lines}"
        lines.append(line)
    c.close()
    ids = [int(x[4:]) for x in lines if x.startswith("id: ")]
    assert ids and ids[0] == version + 1 and ids == sorted(ids)                    # resumed after V, not 0
    assert "event: patch\n" in lines and "event: reset\n" not in lines


def test_the_open_viewer_shows_a_turn_run_from_the_cli(viewing, page, artifacts):
    page.goto(viewing["url"])                     # the token, its redirect, the cookie: a real browser
    page.wait("document.getElementById('chat').innerText.includes('the first answer')")
    assert page.eval("location.search") == ""     # the token left the address bar
    page.wait("document.getElementById('live-state').textContent.includes('live')")
    page.eval("document.getElementById('row-0').sdMark = 'kept'")     # the first turn's element
    second = viewing["tmp"] / "second.json"
    second.write_text(json.dumps([{"text": "the **second** answer, live"}]))
    p = sd(["run", "--state-dir", viewing["home"], "--session", viewing["sid"], "--provider", "scripted",
            "--script", second, "second task"], home=viewing["home"], cwd=viewing["wd"])
    assert "the **second** answer, live" in p.stdout
    page.wait("document.getElementById('chat').innerText.includes('the second answer, live')")
    assert page.eval("[...document.querySelectorAll('#chat .turn')].pop().querySelector('strong').textContent") == "second"
    assert page.eval("sdViewer.n") == 4
    assert page.console_errors == []
    assert all(u.startswith(f"http://127.0.0.1:{viewing['port']}/") for u in page.requests), page.requests
    # patched, not rebuilt: no reset, the document was fetched once, the first turn's element is still
    # the one it was, and the new rows and their bodies came in the patches (no chunk fetched again)
    assert page.eval("window.sdResets || []") == []
    paths = [urlsplit(u).path for u in page.requests]
    assert paths.count("/doc") == 1 and paths.count("/events") == 1, paths
    assert paths.count("/chunk/0") <= 1, paths
    assert page.eval("document.getElementById('row-0').sdMark") == "kept"
    assert page.eval("Object.keys(sdSeen).length") == 2            # the new user and model rows
    # an edit forks the second turn: HEAD moves to the new branch and the page, on HEAD's branch, follows
    third = viewing["tmp"] / "third.json"
    third.write_text(json.dumps([{"text": "the retried answer"}]))
    sd(["run", "--state-dir", viewing["home"], "--session", viewing["sid"], "--provider", "scripted",
        "--script", third, "--edit", "2", "second task, again"], home=viewing["home"], cwd=viewing["wd"])
    try:
        page.wait("document.getElementById('chat').innerText.includes('the retried answer')")
    except TimeoutError:
        raise AssertionError(json.dumps(page.eval("""({chat: document.getElementById('chat').innerText,
            resets: window.sdResets, n: sdViewer.n, head: sdViewer.headRow, follow: sdViewer.follow,
            sel: sdViewer.sel, tip: sdViewer.tip, snips: sdViewer.R.snip})""")) + str(page.console_errors))
    chat = page.eval("document.getElementById('chat').innerText")
    assert "the second answer, live" not in chat and "the first answer" in chat
    assert page.eval("document.querySelectorAll('#graph-svg path.edge.fork').length") == 1
    assert page.eval("window.sdResets || []") == []
    assert [urlsplit(u).path for u in page.requests].count("/doc") == 1
    assert page.console_errors == []
    page.screenshot(artifacts / "view-live.png")


def test_without_an_id_it_follows_this_dirs_newest_session_and_exits_1_when_the_daemon_goes(tmp_path):
    home, wd, other = tmp_path / "state", tmp_path / "work", tmp_path / "elsewhere"
    for d in (home, wd, other):
        d.mkdir()
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "an answer"}]))
    sids = []
    for cwd, task in ((wd, "older here"), (wd, "newest here"), (other, "newest anywhere")):
        out = sd(["run", "--state-dir", home, "--in-process", "--provider", "scripted", "--script", script,
                  "--json", task], home=home, cwd=cwd)
        sids.append(json.loads(out.stdout)["session_id"])
    env = dict(os.environ, SESSIONDAG_HOME=str(home), XDG_RUNTIME_DIR=str(runtime),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    nothing = subprocess.run(CLI + ["view", "--state-dir", str(home), "--no-browser"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert nothing.returncode == 1 and "no session of this working dir" in nothing.stderr
    proc = subprocess.Popen(CLI + ["view", "--state-dir", str(home), "--no-browser"], cwd=wd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        port = urlsplit(url).port
        status, headers, _ = get(port, "/?" + urlsplit(url).query)
        status, _, body = get(port, "/doc", cookie=headers["Set-Cookie"].split(";")[0])
        assert status == 200 and json.loads(body)["meta"]["session_id"] == sids[1]   # this dir's newest
        stop = subprocess.run(CLI + ["daemon", "stop", "--state-dir", str(home)], env=env, capture_output=True,
                              text=True, timeout=120)
        assert stop.returncode == 0, stop.stderr
        assert proc.wait(120) == 1                 # the daemon went away: view says so and exits 1
        assert "daemon" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()


def test_the_viewer_shows_a_model_calls_text_while_it_streams(tmp_path, page, artifacts):
    """A model server on loopback streams part of an answer and holds: the page shows that part while
    the node is still running, then the whole answer once the call ends."""
    model = HeldModel(["The answer ", "begins ", "here, ", "streaming "], ["to ", "its ", "very end."])
    try:
        env = {"SESSIONDAG_OPENAI_BASE_URL": model.base_url, "SESSIONDAG_OPENAI_API_KEY": "k"}
        with start_view(tmp_path, env) as v:
            page.goto(v["url"])
            page.wait("document.getElementById('live-state').textContent.includes('live')")
            run = subprocess.Popen(CLI + ["run", "--state-dir", str(v["home"]), "--session", v["sid"], "--provider",
                                          "openai", "--model", "held", "a streamed task"], cwd=v["wd"], env=v["env"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                assert model.holding.wait(120), run.stderr.read() if run.poll() is not None else "no request"
                page.wait("document.getElementById('chat').innerText.includes('The answer begins here, streaming')",
                          timeout=60)
                turn = "[...document.querySelectorAll('#chat .turn.role-l')].pop()"
                assert page.eval(f"{turn}.classList.contains('status-r')")      # the call is under way
                assert "very end" not in page.eval("document.getElementById('chat').innerText")
                assert page.eval("sdViewer.R.status[sdViewer.n - 1]") == "r"
                page.screenshot(artifacts / "view-streaming.png")
                model.release.set()
                out, err = run.communicate(timeout=120)
                assert run.returncode == 0, err
            finally:
                if run.poll() is None:
                    run.kill()
                    run.communicate()
            page.wait(f"{turn}.classList.contains('status-c')", timeout=60)
            assert "The answer begins here, streaming to its very end." in page.eval(f"{turn}.innerText")
            assert page.console_errors == []
            assert page.eval("window.sdResets || []") == []
            paths = [urlsplit(u).path for u in page.requests]
            assert paths.count("/doc") == 1, paths
    finally:
        model.close()
