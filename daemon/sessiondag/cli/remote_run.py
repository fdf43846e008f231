"""`sessiondag run` through the daemon that serves the state dir: the turn runs in the daemon (so every
editor subscribed to the session follows it live) and this process shows the same progress, answers
the daemon's ask_user / permission requests, and exits with the same codes as an in-process run.

A signal (SIGINT, SIGTERM, SIGHUP) sends `agent/cancel`: the daemon ends the turn `cancelled` and
commits it; a second signal ends this process at once. Like an in-process run, the prompt answers
once the sub-agents the turn spawned and their follow-up turns are done (`wait_subagents`).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Callable

import anyio


async def _open(c: Any, plan: dict[str, Any], workdir: str) -> str:
    params: dict[str, Any] = {"working_dir": workdir}
    if plan["session_id"] is not None:
        params["session_id"] = plan["session_id"]
    return (await c.call("session/open", params))["session_id"]


async def _drop_if_empty(c: Any, sid: str) -> None:
    """A refused first prompt leaves nothing behind: the session this run opened for it is reset
    (only while it holds no turn: another client may have used it meanwhile)."""
    try:
        branch = await c.call("session/get_branch", {"session_id": sid})
        if not any(n.get("role") == "user" for n in branch.get("nodes", [])):
            await c.call("session/reset", {"session_id": sid})
    except Exception as e:  # the refusal is what the user needs to see; this is a tidy-up
        print(f"sessiondag: could not remove the empty session {sid}: {e}", file=sys.stderr)


async def remote_turn(socket: str, plan: dict[str, Any], workdir: str, *, settings: dict[str, Any],
                      ask: Callable[..., str], permit: Callable[[str, dict], bool],
                      on_event: Callable[[str, dict[str, Any]], None]) -> tuple[dict[str, Any], int | None]:
    """Run the planned turn in the daemon at `socket`. Returns (result, signal number or None)."""
    from sessiondag_client import SessionDagError, connect
    from ..rpc.errors import from_wire
    c = await connect(socket, client_name="sessiondag run")
    got: list[int] = []
    loop_sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    try:
        sid = await _open(c, plan, workdir)

        async def on_ask(p: dict[str, Any]) -> dict[str, Any]:
            return {"answer": await anyio.to_thread.run_sync(ask, p["question"], p.get("options"))}

        async def on_permission(p: dict[str, Any]) -> dict[str, Any]:
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

        params: dict[str, Any] = {"session_id": sid, "content": plan["task"], "wait_subagents": True, **settings}
        if plan["branch_from"]:
            params["branch_from"] = plan["branch_from"]
            if plan.get("restore_files"):
                params["restore_files"] = True
        result: dict[str, Any] = {}
        failed: list[BaseException] = []  # raised after the task group, never as an ExceptionGroup
        async with anyio.create_task_group() as tg:
            async def pump() -> None:
                try:
                    async for msg in c.notifications():
                        p = msg.get("params") or {}
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
                    result.update(await c.call("agent/prompt", params))
                except Exception as e:  # typed or plain RPC errors, a lost connection: raised below
                    failed.append(e)
                tg.cancel_scope.cancel()
            tg.start_soon(pump)
            tg.start_soon(prompt)
        if failed and not result:
            if plan["session_id"] is None or plan.get("creates"):  # refused: the session this run made goes
                await _drop_if_empty(c, sid)
            raise failed[0]
        for msg in c.pending_notifications():  # updates sent before the answer: show them all
            p = msg.get("params") or {}
            if msg.get("method") == "agent/did_update" and p.get("session_id") == sid:
                on_event(p.get("kind", ""), p)
        for s in loop_sigs:
            loop.remove_signal_handler(s)
        return {"session_id": sid, "head_id": result["head_id"], "stop_reason": result["stop_reason"],
                "usage": result["usage"], "text": result["text"], "error": result["error"]}, (got[0] if got else None)
    except SessionDagError as e:  # the daemon's typed errors, as an in-process run raises them
        raise from_wire(e) from None
    finally:
        await c.aclose()
