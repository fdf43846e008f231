"""`sessiondag sessions watch ID`: print a session live — every turn as it happens (turn started,
the model's text as it streams, tool calls, the turn committed with its usage), whoever runs it:
an editor, `sessiondag run`, another process writing to the store.

Connects to the daemon serving the state dir (starting one if none runs), subscribes, prints the
last turns for context, then follows. Ctrl-C stops. `--turns N` exits after N committed turns
(scripts, tests). Exit codes: 0 ok · 1 no such session / the daemon went away · 2 usage.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, TextIO

import anyio
import orjson

from .catalog import one_line

HISTORY = 6


class Printer:
    """Turns notifications into lines; an llm node's text is shown once (streamed or whole)."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stdout
        self.streamed: set[str] = set()   # llm nodes whose deltas were printed
        self.shown: set[str] = set()      # nodes already printed
        self.agent_turn = False           # a daemon agent turn is running: did_update carries it

    def w(self, s: str) -> None:
        self.out.write(s)
        self.out.flush()

    def node_line(self, n: Mapping[str, Any]) -> None:  # a wire node, whole or its line's fields
        if n["id"] in self.shown:
            return
        self.shown.add(n["id"])
        who = {"user": "user", "llm": "assistant"}.get(n["role"], n["role"])
        self.w(f"{who}: {one_line(n.get('output') if isinstance(n.get('output'), str) else n.get('output'), 400)}\n")

    def agent(self, p: Mapping[str, Any]) -> None:  # wp.AgentDidUpdateParams, read with .get
        kind = p.get("kind")
        if kind == "turn_started":
            self.agent_turn = True
            self.w(f"── turn started by {p.get('client_id')}\n")
        elif kind == "node_appended":
            n = p["node"]
            if n["role"] == "user":
                self.node_line(n)
        elif kind == "text_delta":
            if p["node_id"] not in self.streamed:
                self.streamed.add(p["node_id"])
                self.w("assistant: ")
            self.w(p["delta"])
        elif kind == "tool_call":
            n = p["node"]
            self.w(f"\n→ {n['name']}({orjson.dumps(n.get('input')).decode()[:200]})\n")
        elif kind == "node_updated":
            n = p["node"]
            if n["role"] == "llm" and n["status"] != "running":
                if n["id"] in self.streamed:
                    self.w("\n")
                    self.shown.add(n["id"])
                elif n.get("output"):
                    self.node_line(n)
                if n["status"] == "error":
                    err = (n.get("metadata") or {}).get("error") or {}
                    self.w(f"   error: {err.get('type')}: {err.get('message')}\n")
            elif n["role"] == "code" and n["status"] != "running" and "tool_call_id" in (n.get("metadata") or {}):
                self.w(f"← {n['name']}: {n['status']}\n")
        elif kind == "turn_committed":
            self.agent_turn = False
            r = p.get("result") or {}
            u = r.get("usage") or {}
            self.w(f"── turn committed: {r.get('stop_reason')} · {u.get('input_tokens', 0)} in / "
                   f"{u.get('output_tokens', 0)} out · head {str(r.get('head_id'))[:12]}\n")

    def change(self, p: Mapping[str, Any]) -> None:  # wp.SessionDidChangeParams, read with .get
        """Writes seen through the store (another process, or session/* calls): whole nodes."""
        if self.agent_turn:
            return
        for ch in p.get("changes") or ():
            if ch.get("kind") == "append":
                n = ch["node"]
                if n["role"] == "user" and n.get("caller") == "ROOT" and n.get("predecessor"):
                    self.node_line(n)
            elif ch.get("kind") == "update":
                f = ch.get("fields") or {}
                if f.get("status") in ("completed", "error", "cancelled") and isinstance(f.get("output"), str) \
                        and ch["node_id"] not in self.shown and ch["node_id"] not in self.streamed:
                    self.shown.add(ch["node_id"])
                    self.w(f"assistant: {one_line(f['output'], 400)}" + (
                        f" ({f['status']})" if f["status"] != "completed" else "") + "\n")
            elif ch.get("kind") == "reload":
                self.w("── the session was reloaded (another process rotated its journal)\n")


async def _watch(sid_ref: str, state_dir: str | None, turns: int | None) -> int:
    from sessiondag_client import connect
    from ..context.store_factory import open_store
    from .common import NoSession, resolve_session
    store = open_store(state_dir)
    try:
        sid = resolve_session(store, sid_ref)
        store.session(sid)
    except NoSession as e:
        print(f"sessiondag sessions watch: {e}", file=sys.stderr)
        return 1
    finally:
        store.close()
    from sessiondag_client.discovery import find_daemon
    running = find_daemon(store.state_dir) is not None
    c = await connect(state_dir=store.state_dir, auto_start=True, client_name="sessiondag sessions watch")
    if not running:  # said, not silent: the daemon outlives this watch until its idle timeout
        print("sessiondag sessions watch: no daemon served this state dir; started one to follow the session "
              "(it exits after 5 minutes without clients; `sessiondag daemon stop` stops it now)", file=sys.stderr)
    pr = Printer()
    try:
        await c.subscribe(sid)
        for r in (await c.view(sid, "chat"))[-HISTORY:]:
            pr.node_line({"id": r["id"], "role": r["role"], "output": r["text"]})
        pr.w(f"── watching {sid} (Ctrl-C to stop)\n")
        done = 0
        async for msg in c.notifications():
            p = msg.get("params") or {}
            if p.get("session_id") != sid:
                continue
            if msg["method"] == "agent/did_update":
                pr.agent(p)
                if p.get("kind") == "turn_committed":
                    done += 1
                    if turns is not None and done >= turns:
                        return 0
            elif msg["method"] == "session/did_change":
                pr.change(p)
            elif msg["method"] == "session/did_unbind":
                pr.w(f"── working dir {p.get('working_dir')} is gone\n")
        print("sessiondag sessions watch: the daemon closed the connection", file=sys.stderr)
        return 1
    finally:
        await c.aclose()


def watch(sid_ref: str, state_dir: str | None, turns: int | None = None) -> int:
    try:
        return anyio.run(_watch, sid_ref, state_dir, turns)
    except KeyboardInterrupt:
        return 0
