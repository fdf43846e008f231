"""A client-side terminal for the ACP tests: what an editor's `terminal/*` does, with real
processes (its own process group, stdout and stderr merged, output kept up to the byte limit)."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from typing import Any

from acp.schema import (CreateTerminalResponse, KillTerminalResponse, ReleaseTerminalResponse, TerminalExitStatus,
                        TerminalOutputResponse, WaitForTerminalExitResponse)

_ids = itertools.count(1)


class Terminals:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []   # what the agent asked to run
        self.live: dict[str, dict[str, Any]] = {}
        self.killed: list[str] = []
        self.released: list[str] = []

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kw):
        tid = f"term-{next(_ids)}"
        proc = await asyncio.create_subprocess_exec(command, *(args or ()), cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                    start_new_session=True)
        t = {"proc": proc, "out": bytearray(), "limit": output_byte_limit, "truncated": False}
        t["reader"] = asyncio.ensure_future(self._read(t))
        self.live[tid] = t
        self.created.append({"id": tid, "session_id": session_id, "command": command, "args": list(args or ()),
                             "cwd": cwd})
        return CreateTerminalResponse(terminal_id=tid)

    @staticmethod
    async def _read(t: dict[str, Any]) -> None:
        while chunk := await t["proc"].stdout.read(65536):
            t["out"] += chunk
            if t["limit"] is not None and len(t["out"]) > t["limit"]:
                del t["out"][:len(t["out"]) - t["limit"]]   # the spec keeps the end
                t["truncated"] = True

    def _status(self, t: dict[str, Any]) -> TerminalExitStatus | None:
        rc = t["proc"].returncode
        if rc is None:
            return None
        return TerminalExitStatus(exit_code=rc if rc >= 0 else None,
                                  signal=signal.Signals(-rc).name if rc < 0 else None)

    async def terminal_output(self, session_id, terminal_id, **kw):
        t = self.live[terminal_id]
        return TerminalOutputResponse(output=t["out"].decode("utf-8", errors="replace"), truncated=t["truncated"],
                                      exit_status=self._status(t))

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kw):
        t = self.live[terminal_id]
        await t["proc"].wait()
        await t["reader"]
        st = self._status(t)
        return WaitForTerminalExitResponse(exit_code=st.exit_code, signal=st.signal)

    async def kill_terminal(self, session_id, terminal_id, **kw):
        self.killed.append(terminal_id)
        t = self.live[terminal_id]
        if t["proc"].returncode is None:
            os.killpg(t["proc"].pid, signal.SIGKILL)
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kw):
        self.released.append(terminal_id)
        t = self.live.pop(terminal_id)
        if t["proc"].returncode is None:
            os.killpg(t["proc"].pid, signal.SIGKILL)
            await t["proc"].wait()
        return ReleaseTerminalResponse()
