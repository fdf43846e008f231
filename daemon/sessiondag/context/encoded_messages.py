"""EncodedMessages: the wire messages of a model call, each kept as its JSON encoding.

What `render_bytes` makes (session/render's bytes) is also what an OpenAI-compatible request body
holds: the runtime carries a render in this form to a provider that sends JSON anyway
(`encoded_messages = True`, runtime/providers/openai_compat.py), which splices `json()` into the
request body — no message is decoded into dicts only to be encoded again. Any other provider gets
`decoded()`: the same messages as plain values (decoded in one pass, when asked).

An item is one message's JSON (bytes, from the renderer) or a plain dict added after the render (the
runtime's injected instructions, an in-function prompt): encoded when the body is built, so a value
that does not encode fails in the provider call, as it did when the SDK encoded it.
`json() == orjson.dumps(decoded())`, byte for byte.
"""

from __future__ import annotations

from typing import Any

from orjson import dumps, loads

# A provider wire message (openai / anthropic): a JSON object whose shape is the provider's API, read
# by the provider's client; its values include a node's own values passed through as they are
# (core/model.py's Any: an inner call's input, a tool call's input) and orjson Fragments sliced
# from stored lines (context/stored.py).
Message = dict[str, Any]

_ROLE, _SYSTEM = b'{"role":', b'{"role":"system"'


class EncodedMessages:
    __slots__ = ("items",)

    def __init__(self, encoded: list[bytes]):
        self.items: list[bytes | Message] = list(encoded)

    def __len__(self) -> int:
        return len(self.items)

    def append(self, message: Message) -> None:
        self.items.append(message)

    def leading_system(self) -> int:
        """How many messages at the start are system messages."""
        i = 0
        for m in self.items:
            if not _is_system(m):
                break
            i += 1
        return i

    def inserted(self, i: int, message: Message) -> EncodedMessages:
        out = EncodedMessages([])
        out.items = self.items[:i] + [message] + self.items[i:]
        return out

    def json(self) -> bytes:
        """The JSON array of the messages (what orjson.dumps of the plain ones gives)."""
        return b"".join(self.pieces())

    def pieces(self) -> list[bytes]:
        """`json()` in pieces (b"[", a message, b",", …, b"]"), for a caller that joins them into
        something bigger: one copy of the messages' bytes instead of two."""
        if not self.items:
            return [b"[", b"]"]
        out = [b","] * (2 * len(self.items) + 1)
        out[0], out[-1] = b"[", b"]"
        out[1::2] = [m if type(m) is bytes else dumps(m) for m in self.items]
        return out

    def size(self) -> int:
        """len(self.json()), without joining."""
        n = len(self.items)
        return 2 + max(n - 1, 0) + sum(len(m) if type(m) is bytes else len(dumps(m, default=str))
                                       for m in self.items)

    def decoded(self) -> list[Message]:
        """The messages as plain values (a new list; the dicts added after the render as they are)."""
        if all(type(m) is bytes for m in self.items):
            whole: list[Message] = loads(self.json())   # our own encoding of such messages
            return whole
        return [loads(m) if type(m) is bytes else m for m in self.items]  # type: ignore[misc]


def _is_system(m: bytes | Message) -> bool:
    if type(m) is not bytes:
        return m.get("role") == "system"  # type: ignore[union-attr]
    if m.startswith(_ROLE):  # the renderer writes the role first
        return m.startswith(_SYSTEM) and m[len(_SYSTEM):len(_SYSTEM) + 1] in (b",", b"}")
    role: object = loads(m).get("role")
    return role == "system"


def plain_messages(messages: list[Message] | EncodedMessages) -> list[Message]:
    """Plain message dicts, whichever form `messages` has."""
    return messages.decoded() if isinstance(messages, EncodedMessages) else messages
