"""A stopping daemon tells every connected client, not only a session's subscribers (issue 26):
`daemon/will_stop {reason, cancelled_sessions}` reaches a client that subscribed and one that only
prompts, before their transports close."""

import os
import signal
import subprocess
import sys

import anyio
import pytest

from e2e_support import DaemonProc
from sessiondag_client import connect_unix

pytestmark = pytest.mark.anyio

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


async def _closed(c, timeout: float = 30.0) -> None:
    """The transport closes after the notification: the next request fails."""
    with anyio.fail_after(timeout):
        while True:
            try:
                await c.ping()
            except (ConnectionError, OSError, anyio.ClosedResourceError, anyio.EndOfStream,
                    anyio.BrokenResourceError):
                return
            await anyio.sleep(0.05)


@pytest.mark.parametrize("how", ["daemon stop", "SIGTERM"])
async def test_every_client_hears_the_daemon_stop(tmp_path, state_dir, workdir, check, how):
    script = tmp_path / "hang.yaml"
    script.write_text("- text: thinking about it\n  hang: true\n")
    d = DaemonProc(["--socket", "--state-dir", str(state_dir)],
                   env=dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script)))
    try:
        watcher = await connect_unix(d.socket)      # subscribed to the session, runs nothing
        prompter = await connect_unix(d.socket)     # runs the turn, subscribed to nothing
        bystander = await connect_unix(d.socket)    # neither: it only listed sessions
        for c in (watcher, prompter, bystander):
            c.observer = check
        h = await prompter.open(working_dir=str(workdir))
        await watcher.subscribe(h.id)
        await bystander.list()
        answer: dict = {}

        async def prompt() -> None:
            answer.update(await prompter.agent_prompt(h.id, "think", provider="scripted", script=str(script)))
        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await watcher.next_notification("agent/did_update", timeout=30)   # the turn runs
            if how == "daemon stop":
                r = await anyio.to_thread.run_sync(lambda: subprocess.run(
                    CLI + ["daemon", "stop", "--state-dir", str(state_dir)], capture_output=True, text=True,
                    timeout=120))
                assert r.returncode == 0, r.stderr
            else:
                d.proc.send_signal(signal.SIGTERM)
            reason = "stop" if how == "daemon stop" else "signal"
            for c in (watcher, prompter, bystander):
                note = await c.next_notification("daemon/will_stop", timeout=30)
                assert note["params"] == {"reason": reason, "cancelled_sessions": [h.id]}
        assert answer["stop_reason"] == "cancelled"      # the prompt was answered before the close
        for c in (watcher, prompter, bystander):
            await _closed(c)
            await c.aclose()
        assert d.proc.wait(60) == 0
    finally:
        if d.proc.poll() is None:
            d.stop()


async def test_a_stop_with_no_turn_running_names_no_session(socket_daemon, state_dir):
    c = await connect_unix(socket_daemon.socket)
    try:
        await c.stop_daemon()
        note = await c.next_notification("daemon/will_stop", timeout=30)
        assert note["params"] == {"reason": "stop", "cancelled_sessions": []}
        await _closed(c)
    finally:
        await c.aclose()
    assert socket_daemon.proc.wait(60) == 0
