"""The running `sessiondag chat`: one daemon connection, the input prompt (prompt_toolkit), this
client's turns and the live turns other clients run in the same session.

- A message runs as `agent/prompt` with the model resolved in this shell (cli/model.py), exactly as
  `sessiondag run` sends it; the session is created by the first message (a chat that says nothing
  leaves nothing behind).
- Permission requests are asked inline and answered with one key (no Enter): `y` once, `a` always
  for this chat, `n` no (`--allow` grants kinds up front); `ask_user` questions are a line at the
  prompt (an option's number or text).
- Ctrl-C during a turn cancels it (the daemon commits it `cancelled`); a second Ctrl-C before it ends
  quits. At the prompt Ctrl-C clears the line, twice on an empty line quits; Ctrl-D quits.
- Every `agent/did_update` of the session is drawn (chat_view.py), so a turn run from an editor or
  another terminal streams in above the prompt.
- The daemon stopping (`daemon/will_stop`, sent to every client) or going away is said once; the
  next message or command connects again (starting a daemon), subscribed as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

import anyio
from prompt_toolkit.formatted_text import ANSI

from .chat_commands import QUIT, run_command
from .chat_view import BOLD, DIM, RESET, ChatView
from .progress import STOP_REASONS

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyPressEvent
    from sessiondag_client import AsyncClient
    from sessiondag_client.wire import protocol as wp

    from .model import ModelFlags

class Chat:
    def __init__(self, client: AsyncClient, *, state_dir: str, workdir: str, session_id: str | None,
                 flags: ModelFlags, allowed: set[str]):
        self.c = client
        self.state_dir = state_dir
        self.workdir = workdir
        self.sid = session_id
        self.flags = flags.copy()         # provider flags and /model changes (this chat)
        self.record_model = False         # the next prompt records self.flags as the session's model
        self.always = set(allowed)
        self.view = ChatView()
        self.me = (client.server_info or {}).get("client_id")
        self.mine_running = False
        self.committed = asyncio.Event()
        self.usage = [0, 0]
        self.session: PromptSession[str] | None = None  # chat.py builds it
        self.next_branch_from: str | None = None
        self.connect: Callable[[], Awaitable[AsyncClient]] | None = None  # a new client (chat.py): after the daemon went away
        self.gone = False                 # the daemon stopped or the connection dropped: connect again
        self._pump: asyncio.Task[None] | None = None

    # --- the daemon ------------------------------------------------------------------------------
    async def ensure_session(self) -> str:
        if self.sid is None:
            self.sid = (await self.c.call("session/open", {"working_dir": self.workdir}))["session_id"]
            await self.subscribe()
            self.view.note(f"session {self.sid}")
        return self.sid

    async def subscribe(self) -> None:
        if self.sid is not None:
            await self.c.call("session/subscribe", {"session_id": self.sid})

    def start_pump(self) -> None:
        self.c.on_request("agent/request_permission", self.on_permission)
        self.c.on_request("agent/ask_user", self.on_ask)
        self._pump = asyncio.get_running_loop().create_task(self.pump())

    async def reconnect(self) -> None:
        """After the daemon stopped or vanished: a new connection (the daemon started again when
        needed), this chat's handlers and subscription as before."""
        if not self.gone or self.connect is None:
            return
        with contextlib.suppress(Exception):
            await self.c.aclose()
        self.c = await self.connect()
        self.me = (self.c.server_info or {}).get("client_id")
        self.gone = False
        await self.subscribe()
        self.start_pump()
        self.view.note("connected to the daemon again")

    async def pump(self) -> None:
        try:
            await self._pump_notes()
        except (ConnectionError, OSError, anyio.ClosedResourceError, anyio.EndOfStream, anyio.BrokenResourceError):
            pass
        if not self.gone:   # no daemon/will_stop first: it crashed or was killed
            self.gone = True
            self.view.error("the daemon went away; the next message starts it again")

    async def _pump_notes(self) -> None:
        async for msg in self.c.notifications():
            p: Mapping[str, Any] = msg.get("params") or {}  # read with .get: any notification
            if msg.get("method") == "daemon/will_stop":
                why = STOP_REASONS.get(p.get("reason") or "")
                self.gone = True
                self.view.error("the daemon stopped" + (f" ({why})" if why else "")
                                + "; the next message starts it again")
                continue
            if msg.get("method") == "session/did_delete" and p.get("session_id") == self.sid:
                self.view.error("this session was deleted by another client")
                continue
            if msg.get("method") != "agent/did_update" or p.get("session_id") != self.sid:
                continue
            kind = p.get("kind", "")
            if kind == "turn_started" and p.get("client_id") != self.me:
                self.view.turn_of = p.get("client_id")
                self.view.note(f"— a turn by another client ({p.get('client_id')}) —")
            elif kind == "turn_committed":
                if p.get("client_id") == self.me:
                    self.committed.set()
                elif self.view.turn_of is not None:
                    self.view.event(kind, p)
                    self.view.turn_of = None
                    r = p.get("result") or {}
                    self.view.note(f"— their turn ended: {r.get('stop_reason')} —")
                continue
            self.view.event(kind, p)

    async def turns(self) -> list[wp.Call]:
        """The user turns of the current branch, numbered from 1 (the numbering users see)."""
        if self.sid is None:
            return []
        branch: wp.SessionGetBranchResult = await self.c.call("session/get_branch", {"session_id": self.sid})
        nodes = branch["nodes"]
        return [n for n in nodes if n["role"] == "user" and n.get("caller") == "ROOT" and n.get("predecessor")]

    # --- one turn ----------------------------------------------------------------------------------
    async def run_turn(self, content: str, branch_from: str | None = None) -> wp.AgentPromptResult | object:
        from ..context.store_factory import open_store
        from .model import resolve_model
        await self.reconnect()
        sid = await self.ensure_session()
        store = open_store(self.state_dir)
        try:
            model = resolve_model(store, sid, self.flags)
        finally:
            store.close()
        params: dict[str, object] = {"session_id": sid, "content": content, **model.wire()}
        if self.record_model:
            params["record_settings"] = True
        branch_from = branch_from or self.next_branch_from
        if branch_from:
            params["branch_from"] = branch_from
        self.next_branch_from = None
        self.committed.clear()
        self.mine_running = True
        self.view.start()
        loop = asyncio.get_running_loop()
        interrupts: list[int] = []
        task: asyncio.Task[wp.AgentPromptResult] = loop.create_task(self.c.call("agent/prompt", params))

        def on_sigint() -> None:
            interrupts.append(1)
            if len(interrupts) == 1:
                self.view.note("cancelling… (Ctrl-C again quits)")
                loop.create_task(self.c.call("agent/cancel", {"session_id": sid}))
            else:
                task.cancel()
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            res = await task
        except asyncio.CancelledError:
            self.view.stop()
            return QUIT
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.mine_running = False
        try:
            await asyncio.wait_for(self.committed.wait(), 5)  # the last updates are drawn before the summary
        except asyncio.TimeoutError:
            pass
        self.view.stop()
        self.record_model = False
        u = res.get("usage") or {}
        self.usage[0] += int(u.get("input_tokens") or 0)
        self.usage[1] += int(u.get("output_tokens") or 0)
        err = res.get("error")
        if err:
            self.view.error(f"error: {err.get('type')}: {err.get('message')}")
        status = "" if res["stop_reason"] == "end_turn" else f" · {res['stop_reason']}"
        n = len(await self.turns())
        self.view.note(f"turn {n}{status} · {u.get('input_tokens', 0)} in / {u.get('output_tokens', 0)} out")
        return res

    # --- requests from the daemon ------------------------------------------------------------------
    async def ask_line(self, message: str, default: str = "") -> str | None:
        """One answer typed at the prompt; None for Ctrl-C / Ctrl-D."""
        self.view.stop()
        self.view.last_tool = None  # the question and its answer stay on screen below the tool line
        assert self.session is not None  # chat.py set it before the chat runs
        try:
            return await self.session.prompt_async(ANSI(message), default=default, multiline=False)
        except (KeyboardInterrupt, EOFError):
            return None
        finally:
            if self.mine_running:
                self.view.start()

    async def ask_key(self, message: str, keys: str) -> str | None:
        """An answer of one key from `keys`, taken as it is pressed (no Enter); a typed word and Enter
        works too. None for Ctrl-C / Ctrl-D."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.key_binding import KeyBindings
        kb = KeyBindings()
        for k in keys:
            @kb.add(k)
            def _(event: KeyPressEvent, k: str = k) -> None:
                if event.current_buffer.text:   # a word being typed: the key is part of it
                    event.current_buffer.insert_text(k)
                    return
                event.current_buffer.text = k   # shown after the question, then answered
                event.current_buffer.validate_and_handle()
        self.view.stop()
        self.view.last_tool = None
        try:
            return await PromptSession(key_bindings=kb).prompt_async(ANSI(message))
        except (KeyboardInterrupt, EOFError):
            return None
        finally:
            if self.mine_running:
                self.view.start()

    async def on_permission(self, p: wp.AgentRequestPermissionParams) -> wp.AgentRequestPermissionResult:
        kind = p.get("kind", "")
        if kind in self.always or "all" in self.always:
            return {"granted": True}
        detail = p.get("detail") or {}
        what = detail.get("path") or detail.get("command") or detail
        while True:
            ans = await self.ask_key(f"{BOLD}allow {kind}{RESET} {what}?  [y] once  [a] always (this chat)  [n] no › ",
                                     "yan")
            if ans is None:
                self.view.note("refused; cancelling the turn")
                await self.c.call("agent/cancel", {"session_id": self.sid})
                return {"granted": False}
            a = ans.strip().lower()
            if a in ("y", "yes"):
                return {"granted": True}
            if a in ("a", "always"):
                self.always.add(kind)
                return {"granted": True}
            if a in ("n", "no", ""):
                self.view.note(f"{kind} refused")
                return {"granted": False}

    async def on_ask(self, p: wp.AgentAskUserParams) -> wp.AgentAskUserResult:
        options = p.get("options") or []
        self.view.line(f"{BOLD}? {p.get('question')}{RESET}")
        for i, o in enumerate(options, 1):
            self.view.line(f"  {i}. {o}")
        ans = await self.ask_line("answer › " if not options else f"answer [1-{len(options)} or text] › ")
        if ans is None:
            raise RuntimeError("no answer")
        a = ans.strip()
        if a.isdigit() and 1 <= int(a) <= len(options):
            a = options[int(a) - 1]
        return {"answer": a}

    # --- the loop ----------------------------------------------------------------------------------
    async def main(self, first: str | None = None) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout
        await self.subscribe()
        self.start_pump()
        self.view.note(f"sessiondag chat · {self.sid or 'new session'} · {self.workdir} · /help for commands, "
                       f"Ctrl-D quits")
        empty_interrupts = 0
        prefill = ""
        try:
            if first and await self.run_turn(first) is QUIT:
                return 0
            assert self.session is not None  # chat.py set it before the chat runs
            while True:
                try:
                    with patch_stdout(raw=True):
                        text = await self.session.prompt_async(ANSI(f"{BOLD}›{RESET} "), default=prefill)
                except KeyboardInterrupt:
                    empty_interrupts += 1
                    if empty_interrupts >= 2:
                        break
                    self.view.note("(Ctrl-C again or Ctrl-D to quit)")
                    prefill = ""
                    continue
                except EOFError:
                    break
                empty_interrupts = 0
                prefill = ""
                if not text.strip():
                    continue
                if text.startswith("/"):
                    await self.reconnect()
                    out = await run_command(self, text)
                    if out is QUIT:
                        break
                    if isinstance(out, str):  # /edit: the text to edit, prefilled
                        prefill = out
                    continue
                if await self.run_turn(text) is QUIT:
                    break
        finally:
            if self._pump is not None:
                self._pump.cancel()
            self.view.stop()
            self.view.write(DIM + (f"session: {self.sid}" if self.sid else "nothing was sent") + RESET + "\n")
        return 0


def history_path(state_dir: str) -> str:
    os.makedirs(state_dir, exist_ok=True)
    return os.path.join(state_dir, "chat_history")
