"""A big session/get_branch answer decoded straight into `Call`s (msgspec), without the generic dicts.

The generic path parses the frame into dicts (orjson) and then makes a `Call` of each node dict
(`calls_of`): at 100k nodes the dicts are built only to be handed over. msgspec decodes the frame
against the answer's shape (`_Answer`: a JSON-RPC result holding `nodes: list[Call]`) and builds
each `Call` as it parses (the dataclass of wire/types.py, the public type, unchanged): about 0.6x
the CPU of the generic path for a 100 MB branch.

The typed path is only a shortcut: the Calls it gives are equal to what `calls_of` gives for the
same frame (tests/rpc/test_client_branch_decode.py, hypothesis). Any frame it cannot take as such —
a field null or of another type than the Call declares (the generic path keeps those as they come
or drops them to the default), an error answer, anything malformed — makes `decode_branch` answer
None and the frame goes through the generic path, which is where its errors are raised. One thing
it normalizes: a `created_at` sent as an integer comes as the float the field declares (equal
value).

msgspec is imported when the first big branch is decoded (`_typed`, which builds the structs then),
not with the client: `import sessiondag_client` does not load it.
"""

# no `from __future__ import annotations`: the structs are built in a function, and msgspec reads
# their annotations as objects (a string naming a local class would not resolve)
import re
from functools import cache
from typing import Any, Protocol

from .wire.codec import BIG_BODY, gc_paused
from .wire.types import Call


class BranchResult(Protocol):
    """session/get_branch's result as the typed path gives it (rpc_schema: nodes, head_id,
    next_cursor, total); at run time a msgspec Struct, `BranchAnswer`."""

    nodes: list[Call]
    head_id: str
    next_cursor: str | None
    total: int


@cache
def _typed() -> tuple[Any, Any, type[Exception]]:
    """(the BranchAnswer struct, the frame's decoder, msgspec's decode error), built once, on the
    first big branch."""
    import msgspec  # imported where used (tests/layer_rules.py OPTIONAL_DEPS): not at client import

    class BranchAnswer(msgspec.Struct):
        """session/get_branch's result (rpc_schema: nodes, head_id, next_cursor, total)."""

        nodes: list[Call]
        head_id: str
        next_cursor: str | None
        total: int

    class _Answer(msgspec.Struct):
        jsonrpc: str
        id: int
        result: BranchAnswer

    return BranchAnswer, msgspec.json.Decoder(_Answer), msgspec.DecodeError


# how the daemon's encoder starts an answer (orjson, keys in insertion order): the request id is read
# from it before the body is parsed, to find the request that asked for a typed decode
ANSWER_HEAD = re.compile(rb'\{"jsonrpc":"2\.0","id":(\d{1,15}),"result":')


def answer_id(body: bytes) -> int | None:
    """The id of a big result frame written the daemon's way, None for anything else (small frames,
    errors, notifications, other key orders)."""
    if len(body) < BIG_BODY:
        return None
    m = ANSWER_HEAD.match(body)
    return None if m is None else int(m[1])


def decode_branch(body: bytes) -> BranchResult | None:
    """The get_branch result of this frame, typed; None when the frame is not one the typed path
    takes (then the generic path decodes it)."""
    _, decoder, decode_error = _typed()
    try:
        with gc_paused():  # one object a node, no cycles (see codec.decode)
            result: BranchResult = decoder.decode(body).result
            return result
    except decode_error:  # ValidationError included
        return None


def __getattr__(name: str) -> Any:
    if name == "BranchAnswer":  # the struct's class, built (msgspec imported) when first asked for
        return _typed()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
