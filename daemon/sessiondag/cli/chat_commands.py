"""The slash commands of `sessiondag chat` (completed at the prompt; `/help` lists them).

Turns are numbered from 1 along the current branch: the numbers `/fork`, `/edit` and `/checkout`
take are the ones `sessions log` and `/branches` show."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prompt_toolkit.completion import CompleteEvent, Completer, Completion
    from prompt_toolkit.document import Document
    from sessiondag_client import AsyncClient
    from sessiondag_client.wire import protocol as wp

    from .model import ModelFlags


from .chat_view import BOLD, RESET, ChatView

QUIT = object()  # a command's answer: leave the chat

COMMANDS = {
    "/fork": "[N]  the next message branches off after turn N (default: the last turn)",
    "/retry": "run the last turn again, on a new branch",
    "/edit": "N  edit turn N's message; sending it branches off before turn N",
    "/branches": "the branches of this session: pick one to check it out",
    "/checkout": "N|NODE  continue from the end of turn N (or from node NODE)",
    "/model": "[[PROVIDER:]MODEL]  show the model, or change it for this session",
    "/usage": "tokens and cost of this chat, of the session and per model",
    "/compact": "[SUMMARY]  replace the history so far by a summary in the model's context",
    "/name": "NAME  name the current branch",
    "/export": "[FILE]  write the current branch as markdown (default: <session>.md)",
    "/help": "this list",
    "/quit": "leave the chat (also Ctrl-D)",
}


class ChatState(Protocol):
    """What the commands use of the running chat (chat_app.py `Chat`, which imports this module:
    naming it here would be an import cycle)."""
    c: AsyncClient
    sid: str | None
    state_dir: str
    view: ChatView
    flags: ModelFlags
    record_model: bool
    next_branch_from: str | None
    usage: list[int]

    async def turns(self) -> list[wp.Call]: ...

    async def run_turn(self, content: str, branch_from: str | None = None) -> object: ...

    async def ask_line(self, message: str, default: str = "") -> str | None: ...


def completer() -> Completer:
    from prompt_toolkit.completion import Completer, Completion

    class SlashCompleter(Completer):
        def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
            text = document.text_before_cursor
            if not text.startswith("/") or " " in text:
                return
            for name, help_text in COMMANDS.items():
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display_meta=help_text)
    return SlashCompleter()


def _turn_arg(turns: list[wp.Call], arg: str | None, what: str) -> int:
    if not turns:
        raise ValueError("no turn yet")
    if arg is None:
        return len(turns)
    if not arg.isdigit() or not 1 <= int(arg) <= len(turns):
        raise ValueError(f"{what}: turn 1 to {len(turns)} (this branch has {len(turns)})")
    return int(arg)


def _end_of_turn(turns: list[wp.Call], n: int, head: str) -> str | None:
    """The last node of turn n: the predecessor of turn n+1's message, or HEAD for the last turn."""
    return turns[n]["predecessor"] if n < len(turns) else head


async def _head(chat: ChatState) -> str:
    res: wp.SessionGetBranchResult = await chat.c.call("session/get_branch", {"session_id": chat.sid, "limit": 1,
                                                                              "order": "desc"})
    return res["nodes"][0]["id"]


async def run_command(chat: ChatState, line: str) -> object:
    try:
        parts = shlex.split(line)
    except ValueError as e:
        chat.view.error(str(e))
        return None
    name, args = parts[0], parts[1:]
    fn = HANDLERS.get(name)
    if fn is None:
        matches = [c for c in COMMANDS if c.startswith(name)]
        if len(matches) != 1:
            chat.view.error(f"unknown command {name}; /help lists them")
            return None
        fn = HANDLERS[matches[0]]
    if fn not in (_help, _quit, _model) and chat.sid is None:
        chat.view.error("nothing to do yet: send a first message")
        return None
    try:
        return await fn(chat, args)
    except ValueError as e:
        chat.view.error(str(e))
    except Exception as e:  # a refused call: one line, the chat goes on
        chat.view.error(f"{name}: {getattr(e, 'message', None) or e}")
    return None


async def _help(chat: ChatState, args: list[str]) -> None:
    for name, text in COMMANDS.items():
        chat.view.line(f"  {BOLD}{name}{RESET} {text}")
    chat.view.note("  Enter sends · Alt-Enter (or a line ending in \\) adds a line · ↑ history · Tab completes")


async def _quit(chat: ChatState, args: list[str]) -> object:
    return QUIT


async def _fork(chat: ChatState, args: list[str]) -> None:
    turns = await chat.turns()
    n = _turn_arg(turns, args[0] if args else None, "/fork")
    chat.next_branch_from = _end_of_turn(turns, n, await _head(chat))
    chat.view.note(f"the next message branches off after turn {n}")


async def _retry(chat: ChatState, args: list[str]) -> object:
    turns = await chat.turns()
    if not turns:
        raise ValueError("no turn to retry")
    last = turns[-1]
    text = last["output"] if isinstance(last["output"], str) else str(last["output"])
    chat.view.note(f"retrying turn {len(turns)}: {text[:60]}")
    return await chat.run_turn(text, branch_from=last["predecessor"])


async def _edit(chat: ChatState, args: list[str]) -> str:
    turns = await chat.turns()
    n = _turn_arg(turns, args[0] if args else None, "/edit")
    chat.next_branch_from = turns[n - 1]["predecessor"]
    chat.view.note(f"editing turn {n}; sending branches off before it (Ctrl-C abandons)")
    out = turns[n - 1]["output"]
    return out if isinstance(out, str) else str(out)


async def _branches(chat: ChatState, args: list[str]) -> None:
    from ..core.branch_labels import where
    res: wp.SessionListBranchesResult = await chat.c.call("session/list_branches", {"session_id": chat.sid})
    rows = []
    for b in res["branches"]:
        if b.get("spawn_root"):  # sub-agents' branches: `sessions branches` shows them
            continue
        leaves = where(b["from_turn"])
        mark = "*" if b["current"] else " "
        rows.append((b["head_id"], f"{mark} {b['label']}  ({b['turns']} turns"
                                   f"{', ' + leaves if leaves else ''}, {b['status']})"))
    if len(rows) <= 1:
        for _, text in rows:
            chat.view.line(text)
        return
    from prompt_toolkit.shortcuts.choice_input import ChoiceInput
    current = next((h for h, t in rows if t.startswith("*")), rows[0][0])
    try:
        picked = await ChoiceInput(message="branches (↑↓ moves, Enter checks out, Ctrl-C keeps this one):",
                                   options=rows, default=current).prompt_async()
    except (KeyboardInterrupt, EOFError):
        picked = None
    if picked is None or picked == res["head_id"]:
        chat.view.note("kept the current branch")
        return
    await chat.c.call("session/checkout", {"session_id": chat.sid, "head_id": picked})
    chat.view.note(f"checked out {picked[:12]}")


async def _checkout(chat: ChatState, args: list[str]) -> None:
    if not args:
        raise ValueError("/checkout N|NODE")
    if args[0].isdigit():
        turns = await chat.turns()
        n = _turn_arg(turns, args[0], "/checkout")
        node = _end_of_turn(turns, n, await _head(chat))
    else:
        node = args[0]
    res: wp.SessionCheckoutResult = await chat.c.call("session/checkout", {"session_id": chat.sid, "head_id": node})
    chat.view.note(f"HEAD is now {res['head_id'][:12]}")


async def _model(chat: ChatState, args: list[str]) -> None:
    from ..context.store_factory import open_store
    from ..runtime.model_settings import recorded
    if args:
        spec = args[0]
        provider, _, model = spec.rpartition(":")
        flags = chat.flags.copy()
        flags.pop("model", None)
        chat.flags = flags
        if provider:
            chat.flags = {"provider": provider}
        chat.flags["model"] = model
        chat.record_model = chat.sid is not None
        chat.view.note(f"model: {spec} (from the next message on; recorded in the session)")
        return
    rec: dict[str, object] = {}
    if chat.sid is not None:
        store = open_store(chat.state_dir)
        try:
            if store.exists(chat.sid):
                rec = recorded(store.session(chat.sid))
        finally:
            store.close()
    chat.view.line(f"session model: {rec or '(set by the first message)'}")
    if chat.flags:
        chat.view.line(f"this chat: {chat.flags}")


async def _usage(chat: ChatState, args: list[str]) -> None:
    """This chat's tokens, then the ledger's (session/usage: every model call, sub-agents included,
    with cost when the models have prices) for the session and per model."""
    chat.view.line(f"this chat: {chat.usage[0]} in / {chat.usage[1]} out")
    res: wp.SessionUsageResult = await chat.c.call("session/usage", {"session_id": chat.sid, "by": "model"})
    t = res["total"]
    chat.view.line(f"this session: {t['input_tokens']} in / {t['output_tokens']} out over {t['calls']} model "
                   f"calls · {_cost(t)}")
    for r in res["rows"]:
        chat.view.line(f"  {r.get('model') or r.get('key') or '?'}: {r['input_tokens']} in / "
                       f"{r['output_tokens']} out · {_cost(r)}")


def _cost(t: wp.UsageTotalsOfASetOfLlmCalls | wp.OneRowOfSessionUsage) -> str:
    if isinstance(t.get("cost_usd"), (int, float)):
        return f"${t['cost_usd']:.4f}"
    return f"${t.get('priced_cost_usd', 0):.4f}+? (unpriced calls)" if t.get("priced_cost_usd") else "cost unknown"


async def _compact(chat: ChatState, args: list[str]) -> None:
    summary = " ".join(args) or await chat.ask_line("summary that replaces the history so far › ")
    if not summary:
        chat.view.note("nothing compacted")
        return
    branch: wp.SessionGetBranchResult = await chat.c.call("session/get_branch", {"session_id": chat.sid})
    nodes = branch["nodes"]
    covers = [n["id"] for n in nodes if n["name"] != "context/system_prompt" and n["id"] != "ROOT"
              and n.get("caller") == "ROOT"]
    if not covers:
        raise ValueError("nothing to compact yet")
    await chat.c.call("session/compact", {"session_id": chat.sid, "covers_ids": covers, "summary": summary})
    chat.view.note(f"compacted {len(covers)} messages: the next model calls get the summary instead")


async def _name(chat: ChatState, args: list[str]) -> None:
    if not args:
        raise ValueError("/name NAME")
    head = await _head(chat)
    await chat.c.call("session/name_branch", {"session_id": chat.sid, "head_id": head, "name": " ".join(args)})
    chat.view.note(f"branch named {' '.join(args)!r}")


async def _export(chat: ChatState, args: list[str]) -> None:
    from ..context.store_factory import open_store
    from .export import markdown
    path = os.path.abspath(args[0] if args else f"{chat.sid}.md")
    store = open_store(chat.state_dir)
    try:
        assert chat.sid is not None  # run_command runs no other command before the first message
        text = markdown(store.session(chat.sid), None)
    finally:
        store.close()
    with open(path, "w") as f:
        f.write(text)
    chat.view.note(f"wrote {path}")


HANDLERS = {"/fork": _fork, "/retry": _retry, "/edit": _edit, "/branches": _branches, "/checkout": _checkout,
            "/model": _model, "/usage": _usage, "/compact": _compact, "/name": _name, "/export": _export,
            "/help": _help, "/quit": _quit}
