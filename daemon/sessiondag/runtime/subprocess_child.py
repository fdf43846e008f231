"""The child's side of a subprocess body (subprocess_body.py is the parent's): `python -m
sessiondag.runtime.subprocess_child SPEC` enters the parent's session through `session_context`
with its own SessionStore, makes the function node its current call, runs the raw body and writes
the result file. Its ask_user and permission checks go to the parent over the relay (relay.py).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

import orjson

from ..context.store_factory import open_store
from ..store.durable_files import write_file_atomic
from .context import Frame, TurnState, call_scope, session_context, turn_scope
from .providers import make_provider
from .relay import ChildRelay
from .runtime import DEFAULT_IDENTITY, Runtime


def main(spec_path: str) -> int:
    with open(spec_path, "rb") as fh:
        spec = orjson.loads(fh.read())
    for p in reversed(spec["sys_path"]):
        if p not in sys.path:
            sys.path.insert(0, p)

    def write_result(obj: dict[str, object]) -> None:
        # whole or absent for the parent, which reads it once this process exits; the temp dir
        # holding it is gone after that, so it is not fsync'd
        write_file_atomic(spec["result_path"], orjson.dumps(obj, default=repr), durable=False)

    try:
        obj: Any = importlib.import_module(spec["module"])   # the user's function, found by name
        for part in spec["qualname"].split("."):
            obj = getattr(obj, part)
        body = getattr(obj, "__wrapped__", obj)
        relay = ChildRelay(spec["relay"]["read"], spec["relay"]["write"])
        store = open_store(spec["state_dir"])  # this process's edge: its settings, resolved once
        rt = Runtime(make_provider(spec["provider"]), config=store.settings(), ask_user=relay.ask_user,
                     permissions=relay.permissions, identity=spec.get("identity") or DEFAULT_IDENTITY)
        with session_context(spec["session_id"], working_dir=spec["working_dir"],
                             store=store, runtime=rt,
                             allow_working_dir_mismatch=True):
            t = spec.get("turn")
            turn = TurnState(t["start_id"], t["tip"]) if t else None
            frame = Frame(spec["node_id"], spec["name"], spec["doc"])
            if turn is not None:
                with turn_scope(turn), call_scope(frame):
                    value = body(*spec["args"], **spec["kwargs"])
            else:
                with call_scope(frame):
                    value = body(*spec["args"], **spec["kwargs"])
        write_result({"ok": True, "value": value})
        return 0
    except BaseException as e:
        write_result({"ok": False, "type": type(e).__name__, "message": str(e), "trace": traceback.format_exc()})
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
