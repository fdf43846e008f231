"""The scripted provider: deterministic and offline.

A script (JSON or YAML file, or an in-memory list/dict) holds assistant replies:

    model: scripted-1            # optional
    replies:                     # or the file is just this list
      - match: "read the notes"  # optional: substring of the last message's text
        text: "Let me look."
        reasoning: "The notes…"  # optional: streamed as reasoning before the text
        tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
        usage: {input_tokens: 10, output_tokens: 4}   # optional (default: chars / 4); also
                                                      # cached_tokens, reasoning_tokens
        error: "boom"            # optional: stream `text`, then fail mid-stream
        hang: true               # optional: stream `text`, then wait until cancelled
        repeat: true             # optional: the reply can be used again

Each request takes the first unused reply whose `match` (if any) occurs in the last message. A
script that has no reply left for a request is an error (loud, never a silent default). With no
script at all the provider answers every request with one built-in deterministic reply, so
`sessiondag run "TASK"` works on a fresh machine.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable

import orjson

from ..errors import RunCancelled
from .base import Completion, ProviderError, ToolCall, request_metadata

if TYPE_CHECKING:
    from ...context.encoded_messages import Message

BUILTIN_MODEL = "scripted"
CHUNK = 16


def load_script(source: object) -> dict[str, Any]:
    if source is None:
        return {"replies": None}
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise ProviderError(f"cannot read script {path!r}: {e}") from None
        import yaml   # loaded with the first YAML script read, not at start-up (~15 ms)
        try:
            data = orjson.loads(raw) if path.endswith(".json") else yaml.safe_load(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as e:
            raise ProviderError(f"script {path!r} is not valid JSON/YAML: {e}") from None
    else:
        data = source
    if isinstance(data, list):
        data = {"replies": data}
    if not isinstance(data, dict) or not isinstance(data.get("replies"), list):
        raise ProviderError("a script is a list of replies or a mapping with a 'replies' list")
    for i, r in enumerate(data["replies"]):
        if not isinstance(r, dict):
            raise ProviderError(f"script reply {i} is not a mapping")
    return data


def message_text(msg: Message) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script: object = None, model: str | None = None, temperature: float | None = None,
                 max_tokens: int | None = None):
        self._source = script
        self.temperature = temperature  # recorded on llm nodes; a script does not sample
        self.max_tokens = max_tokens
        data = load_script(script)
        self.replies: list[dict[str, Any]] | None = data["replies"]
        self.model = model or data.get("model") or BUILTIN_MODEL
        self._used: set[int] = set()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # what this provider received (tests read it)

    def config(self) -> dict[str, object]:
        src = self._source
        if src is not None and not isinstance(src, (str, os.PathLike)):
            src = {"replies": self.replies, "model": self.model}
        return {"provider": "scripted", "script": os.fspath(src) if isinstance(src, os.PathLike) else src,
                "model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def request_metadata(self) -> dict[str, object]:
        return request_metadata(self)

    def _choose(self, messages: list[Message]) -> tuple[int, dict[str, Any]]:
        last = message_text(messages[-1]) if messages else ""
        with self._lock:
            if self.replies is None:
                first_user = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
                text = ("Done. (built-in scripted reply: no script was given) Task: "
                        + " ".join(first_user.split())[:200])
                return -1, {"text": text}
            for i, r in enumerate(self.replies):
                if i in self._used and not r.get("repeat"):
                    continue
                m = r.get("match")
                if m is not None and str(m) not in last:
                    continue
                self._used.add(i)
                return i, r
        raise ProviderError(f"the script has no reply left for a request whose last message is {last[:120]!r}")

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None], cancelled: Callable[[], bool],
                 on_reasoning: Callable[[str], None] | None = None) -> Completion:
        self.requests.append({"messages": messages, "tools": tools})
        idx, r = self._choose(messages)
        reasoning = str(r.get("reasoning") or "")
        if on_reasoning is not None:
            for k in range(0, len(reasoning), CHUNK):
                on_reasoning(reasoning[k:k + CHUNK])
        text = str(r.get("text") or "")
        for k in range(0, len(text), CHUNK):
            if cancelled():
                raise RunCancelled("cancelled while streaming")
            on_text(text[k:k + CHUNK])
        if r.get("error"):
            raise ProviderError(str(r["error"]), partial=text)
        if r.get("hang"):
            ev = threading.Event()
            while not cancelled():
                ev.wait(0.01)
            raise RunCancelled("cancelled while waiting for the model")
        calls = []
        for j, tc in enumerate(r.get("tool_calls") or ()):
            if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
                raise ProviderError(f"script reply {idx}: a tool call needs a name")
            args = tc.get("arguments") or {}
            if not isinstance(args, dict):
                raise ProviderError(f"script reply {idx}: tool call arguments must be a mapping")
            calls.append(ToolCall(str(tc.get("id") or f"call_{idx}_{j}"), tc["name"], args))
        usage = r.get("usage") or {}
        prompt_chars = "".join(message_text(m) for m in messages)
        return Completion(
            text=text, tool_calls=calls,
            input_tokens=int(usage.get("input_tokens", estimate_tokens(prompt_chars))),
            output_tokens=int(usage.get("output_tokens", estimate_tokens(text + repr(r.get("tool_calls"))))),
            model=self.model, finish_reason="tool_calls" if calls else "stop",
            cached_tokens=_opt_int(usage.get("cached_tokens")), reasoning_tokens=_opt_int(usage.get("reasoning_tokens")))


def _opt_int(v: str | float | None) -> int | None:
    return int(v) if v is not None else None
