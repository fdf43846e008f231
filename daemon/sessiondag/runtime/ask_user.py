"""ask_user: a question to the human, answered by the caller's handler and recorded in the DAG.

The answer is a user node whose `input` is the question (with options) and whose `output` is the
answer, inside the current call (caller = the current function/tool node; predecessor None). Who
answers depends on the entry point, never on the code that asks:

- the terminal (`terminal_handler`) in an interactive `sessiondag run`;
- the editor, through a server→client `agent/ask_user` request, when the daemon runs the turn;
- a non-interactive policy in CI: an answers file (`answers_file_handler`, JSON/YAML: a list used in
  order, or a mapping question → answer), or a typed AskUserUnavailableError (`refuse_handler`).
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Callable, TextIO

import orjson

from ..core.model import ROOT, Call, error_metadata
from ..core.settings import Settings
from .context import current_call_id, current_runtime, current_turn, current_writer, session_context
from .errors import AskUserUnavailableError
from .tools import Tool, ToolContext, _obj

Handler = Callable[[str, "list[str] | None"], str]


def ask_user(question: str, options: list[str] | None = None) -> str:
    """Ask the user; returns the answer and records it as a user node inside the current call."""
    w = current_writer()
    if w is None:
        with session_context() as h:
            print(f"sessiondag: ad-hoc session {h.session_id}", file=sys.stderr)
            return ask_user(question, options)
    rt = current_runtime()
    turn = current_turn()
    caller = current_call_id() or (turn.start_id if turn is not None else None)
    pred = None
    if caller is None:
        head = w.head_id
        caller, pred = ROOT, (ROOT if head == ROOT else head)
    inp: dict[str, object] = {"question": question}
    if options:
        inp["options"] = list(options)
    handler = rt.ask_user_handler if rt is not None else refuse_handler
    try:
        answer = handler(question, list(options) if options else None)
    except Exception as e:
        w.append(Call("user", "user", input=inp, output=None, caller=caller, predecessor=pred, status="error",
                      metadata={"error": error_metadata(e, traceback.format_exc())}))
        raise
    if not isinstance(answer, str):
        answer = str(answer)
    node = w.append(Call("user", "user", input=inp, output=answer, caller=caller, predecessor=pred,
                         metadata={"source": "ask_user"}))
    if rt is not None:
        rt.emit("node_appended", session_id=w.session_id, node=node.to_dict())
    return answer


def refuse_handler(question: str, options: list[str] | None = None) -> str:
    raise AskUserUnavailableError(question, "no interactive user and no answers file (SESSIONDAG_ANSWERS)")


def terminal_handler(stdin: TextIO | None = None, out: TextIO | None = None) -> Handler:
    lock = threading.Lock()

    def handler(question: str, options: list[str] | None = None) -> str:
        i, o = stdin or sys.stdin, out or sys.stderr
        with lock:
            o.write(f"\n? {question}\n" + (f"  options: {', '.join(options)}\n" if options else "") + "> ")
            o.flush()
            line = i.readline()
        if not line:
            raise AskUserUnavailableError(question, "the terminal closed")
        return line.rstrip("\n")
    return handler


def answers_file_handler(path: str | os.PathLike[str]) -> Handler:
    """Answers from a JSON/YAML file: a list (used in order) or a mapping question → answer."""
    import yaml   # loaded with the first YAML file read, not at start-up (~15 ms)

    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            raw = f.read()
        data = orjson.loads(raw) if p.endswith(".json") else yaml.safe_load(raw)
    except (OSError, orjson.JSONDecodeError, yaml.YAMLError) as e:
        raise AskUserUnavailableError("", f"answers file {p!r} unreadable: {e}") from None
    if not isinstance(data, (list, dict)):
        raise AskUserUnavailableError("", f"answers file {p!r} is neither a list nor a mapping")
    queue = list(data) if isinstance(data, list) else None
    answers = data if isinstance(data, dict) else {}  # = data when there is no queue
    lock = threading.Lock()

    def handler(question: str, options: list[str] | None = None) -> str:
        with lock:
            if queue is not None:
                if not queue:
                    raise AskUserUnavailableError(question, f"answers file {p!r} has no answer left")
                return str(queue.pop(0))
            if question in answers:
                return str(answers[question])
        raise AskUserUnavailableError(question, f"answers file {p!r} has no answer for it")
    return handler


def default_handler(settings: Settings) -> Handler:
    """The setting agent.answers ($SESSIONDAG_ANSWERS) → answers file; an interactive stdin →
    terminal; else a typed error."""
    path = settings.answers
    if path:
        return answers_file_handler(path)
    try:
        if sys.stdin is not None and sys.stdin.isatty():
            return terminal_handler()
    except (ValueError, OSError):
        pass
    return refuse_handler


def _ask_user_tool(ctx: ToolContext, question: str, options: list[str] | None = None) -> str:
    return ask_user(question, options)


ASK_USER_TOOL = Tool("ask_user", "Ask the user a question and wait for the answer.",
                     _obj({"question": {"type": "string"},
                           "options": {"type": "array", "items": {"type": "string"}}}, ["question"]),
                     _ask_user_tool)
