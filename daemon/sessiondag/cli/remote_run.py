"""`sessiondag run`'s one turn path: the turn runs in a daemon through `agent/prompt` — the daemon
that serves the state dir when one runs (so every editor subscribed to the session follows it live),
else a private `sessiondag serve --stdio` child of this run (the state dir and the settings this
command resolved; it exits with the run, once its sessions are closed). This process shows the
progress, answers the daemon's ask_user / permission requests, and maps the result to exit codes.

A signal (SIGINT, SIGTERM, SIGHUP) sends `agent/cancel`: the daemon ends the turn `cancelled` and
commits it; a second signal ends this process at once (a private child then sees its stdin close,
finishes the cancelled turn and exits). The child runs in a session of its own, so a terminal's ^C
reaches this process alone. Like any prompt with `wait_subagents`, the answer comes once the
sub-agents the turn spawned and their follow-up turns are done.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from typing import IO, TYPE_CHECKING, Any, Callable, Mapping, TypedDict

import anyio

from ..core.settings import BY_NAME

if TYPE_CHECKING:
    from sessiondag_client import AsyncClient

    from sessiondag_client.wire import protocol as wp

    from ..runtime.permissions import Permissions
    from .run_plan import RunPlan

READY_PREFIX = b"sessiondag: ready "   # the child's readiness line (cli/serve.py): not the user's business


class RunResult(TypedDict):
    """The run's turn, as `sessiondag run --json` prints it: agent/prompt's answer (its fields the
    run reports) and the session."""
    session_id: str
    head_id: str
    stop_reason: str
    usage: wp.AgentPromptResultUsage
    text: str
    error: wp.AgentPromptResultError | None


class ChildGone(ConnectionError):
    """The private daemon ended before it answered (its own stderr in the message)."""


def child_env(flags: Mapping[str, tuple[str, str] | str] | None) -> dict[str, str]:
    """The private daemon's environment: this one, with the command line's `-c NAME=VALUE` flags as
    the variables of those settings (flags beat the environment here; there, the variable is the
    highest layer set), so the child resolves the settings this command did."""
    env = dict(os.environ)
    for name, raw in (flags or {}).items():
        value = raw[0] if isinstance(raw, tuple) else raw
        spec = BY_NAME.get(name)
        if spec is not None and spec.env:
            for var in spec.env:
                env.pop(var, None)
            env[spec.env[0]] = str(value)
    return env


async def _client(socket: str | None, state_dir: str, env: dict[str, str], errors: IO[bytes]) -> AsyncClient:
    from sessiondag_client import connect
    from sessiondag_client.connecting import spawn_stdio
    if socket is not None:
        return await connect(socket, client_name="sessiondag run")
    try:
        # the child dies with this process: a SIGKILLed run is a crash of its turn, as it always was
        return await spawn_stdio(state_dir, extra_args=("--parent-pid", str(os.getpid())), env=env, stderr=errors,
                                 new_session=True, client_name="sessiondag run")
    except (ConnectionError, OSError, EOFError) as e:
        raise ChildGone(f"the private daemon (sessiondag serve --stdio) did not start: {e}") from None


def _pass_on(errors: IO[bytes]) -> None:
    """What the private daemon wrote on its stderr (warnings, a crash), minus its readiness line."""
    errors.seek(0)
    for line in errors.read().splitlines(keepends=True):
        if not line.startswith(READY_PREFIX):
            sys.stderr.buffer.write(line)
    sys.stderr.flush()


async def run_turn(socket: str | None, plan: RunPlan, workdir: str, *, state_dir: str, env: dict[str, str],
                   settings: dict[str, object], ask: Callable[..., str], permit: Permissions,
                   on_event: Callable[[str, Mapping[str, Any]], None], max_steps: int,
                   rebind: bool) -> tuple[RunResult, int | None]:
    """The planned turn in the daemon at `socket`, or (None) in a private stdio child of this process."""
    with tempfile.TemporaryFile() as errors:
        try:
            c = await _client(socket, state_dir, env, errors)
            return await remote_turn(c, plan, workdir, settings=settings, ask=ask, permit=permit, on_event=on_event,
                                         max_steps=max_steps, rebind=rebind)
        finally:
            if socket is None:
                _pass_on(errors)


async def _open(c: AsyncClient, plan: RunPlan, workdir: str, rebind: bool) -> str:
    """The session of the run, opened for `workdir` (`rebind`: a session of another working dir is
    moved here, recorded as a rebind — session/open `rebind` — for --allow-working-dir-mismatch, a
    remap rule, a checkout of the same project)."""
    params: dict[str, object] = {"working_dir": workdir}
    if rebind:
        params["rebind"] = True
    if plan["session_id"] is not None:
        params["session_id"] = plan["session_id"]
    sid: str = (await c.call("session/open", params))["session_id"]
    return sid


async def _drop_if_empty(c: AsyncClient, sid: str) -> None:
    """A refused first prompt leaves nothing behind: the session this run opened for it is reset
    (only while it holds no turn: another client may have used it meanwhile)."""
    try:
        branch = await c.call("session/get_branch", {"session_id": sid})
        if not any(n.get("role") == "user" for n in branch.get("nodes", [])):
            await c.call("session/reset", {"session_id": sid})
    except Exception as e:  # the refusal is what the user needs to see; this is a tidy-up
        print(f"sessiondag: could not remove the empty session {sid}: {e}", file=sys.stderr)


async def remote_turn(c: AsyncClient, plan: RunPlan, workdir: str, *, settings: dict[str, object],
                      ask: Callable[..., str], permit: Permissions,
                      on_event: Callable[[str, Mapping[str, Any]], None], max_steps: int,
                      rebind: bool) -> tuple[RunResult, int | None]:
    """Run the planned turn through the client `c` (closed here). Returns (result, signal number or None)."""
    from sessiondag_client import SessionDagError
    from ..rpc.errors import from_wire
    got: list[int] = []
    loop_sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    try:
        sid = await _open(c, plan, workdir, rebind)

        async def on_ask(p: wp.AgentAskUserParams) -> wp.AgentAskUserResult:
            return {"answer": await anyio.to_thread.run_sync(ask, p["question"], p.get("options"))}

        async def on_permission(p: wp.AgentRequestPermissionParams) -> wp.AgentRequestPermissionResult:
            granted = await anyio.to_thread.run_sync(permit, p.get("kind", ""), p.get("detail") or {})
            return {"granted": bool(granted)}
        c.on_request("agent/ask_user", on_ask)
        c.on_request("agent/request_permission", on_permission)

        import asyncio
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if got:  # a second signal: stop now
                for s in loop_sigs:
                    loop.remove_signal_handler(s)
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            got.append(signum)
            loop.create_task(c.call("agent/cancel", {"session_id": sid}))
        for s in loop_sigs:
            loop.add_signal_handler(s, on_signal, s)

        params: dict[str, object] = {"session_id": sid, "content": plan["task"], "wait_subagents": True,
                                     "max_steps": max_steps, **settings}
        if plan["branch_from"]:
            params["branch_from"] = plan["branch_from"]
            if plan.get("restore_files"):
                params["restore_files"] = True
        answer: list[wp.AgentPromptResult] = []   # agent/prompt's, once it comes
        failed: list[BaseException] = []  # raised after the task group, never as an ExceptionGroup
        async with anyio.create_task_group() as tg:
            async def pump() -> None:
                try:
                    async for msg in c.notifications():
                        p: Mapping[str, Any] = msg.get("params") or {}  # read with .get: any notification
                        if msg.get("method") == "agent/did_update" and p.get("session_id") == sid:
                            on_event(p.get("kind", ""), p)
                        elif msg.get("method") == "daemon/will_stop" and sid in p.get("cancelled_sessions", []):
                            # this client prompts without subscribing: the stop says why the turn ends
                            on_event("daemon_stopping", {"session_id": sid, "reason": p.get("reason")})
                except (ConnectionError, OSError) as e:
                    failed.append(e)
                    tg.cancel_scope.cancel()

            async def prompt() -> None:
                try:
                    answer.append(await c.call("agent/prompt", params))
                except Exception as e:  # typed or plain RPC errors, a lost connection: raised below
                    failed.append(e)
                tg.cancel_scope.cancel()
            tg.start_soon(pump)
            tg.start_soon(prompt)
        if failed and not (answer and answer[0]):
            if plan["session_id"] is None or plan.get("creates"):  # refused: the session this run made goes
                await _drop_if_empty(c, sid)
            raise failed[0]
        for msg in c.pending_notifications():  # updates sent before the answer: show them all
            p: Mapping[str, Any] = msg.get("params") or {}
            if msg.get("method") == "agent/did_update" and p.get("session_id") == sid:
                on_event(p.get("kind", ""), p)
        for s in loop_sigs:
            loop.remove_signal_handler(s)
        result = answer[0]
        return {"session_id": sid, "head_id": result["head_id"], "stop_reason": result["stop_reason"],
                "usage": result["usage"], "text": result["text"], "error": result["error"]}, (got[0] if got else None)
    except SessionDagError as e:  # the daemon's typed errors, raised as the daemon's own classes
        raise from_wire(e) from None
    finally:
        await c.aclose()
