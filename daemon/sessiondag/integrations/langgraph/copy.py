"""copy_thread: replay one thread's LangGraph nodes into another session.

Nodes keep their ids, kinds and blob references (the blobs are copied into the target's git store,
content-addressed, so a body is still stored once there); subgraph spawn roots are re-created with
`spawn_branch` (new ids, remapped in callers and predecessors).
"""

from __future__ import annotations

import re

import orjson

from ... import ROOT, Call
from ...store import Session

_BLOB = re.compile(rb'"\$blob":"([0-9a-f]{40})"')


def copy_thread(src: Session, dst: Session) -> None:
    with src.lock:
        nodes = [c for c in src.graph.nodes.values() if c.id != ROOT]
        picked = [c for c in nodes if "langgraph" in c.metadata or
                  (c.metadata.get("spawn_branch_root") and c.metadata.get("source") == "langgraph.subgraph")]
        blobs = {m.decode() for c in picked for m in _BLOB.findall(orjson.dumps(c.metadata))}
        bodies = {sha: src.load_blob(sha) for sha in blobs}
    with dst.lock:
        for data in bodies.values():
            dst.put_blob(data)
        ids = {ROOT: ROOT}
        taken = dst.graph.nodes
        with dst.batched():
            for c in picked:
                caller = ids.get(c.caller, c.caller)
                if c.metadata.get("spawn_branch_root"):
                    ids[c.id] = dst.spawn_branch(caller, source=c.metadata["source"], content=c.output)
                    continue
                pred = c.predecessor if c.predecessor in (None, ROOT) else ids.get(c.predecessor, c.predecessor)
                copy = Call(c.role, c.name, input=c.input, output=c.output, caller=caller, predecessor=pred,
                            status=c.status, metadata=orjson.loads(orjson.dumps(c.metadata)))
                if c.id not in taken:
                    copy.id = c.id
                ids[c.id] = dst.append(copy).id
        dst.commit_turn(f"langgraph: copied from thread {src.graph.extra.get('langgraph.thread_id')!r}\n")
