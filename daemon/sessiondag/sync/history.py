"""Commit-graph questions about a session's git repository (dulwich objects, parents followed)."""

from __future__ import annotations

from collections import deque

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref

MAIN = Ref(b"refs/heads/main")


def is_ancestor(store: BaseObjectStore, ancestor: bytes, descendant: bytes) -> bool:
    """Is `ancestor` reachable from `descendant` (or the same commit)? An ancestor not in the store
    is not (the remote holds commits we never saw)."""
    if ancestor == descendant:
        return True
    if ObjectID(ancestor) not in store:
        return False
    seen = {descendant}
    todo = deque([descendant])
    while todo:
        sha = todo.popleft()
        try:
            obj = store[ObjectID(sha)]
        except KeyError:
            continue
        if not isinstance(obj, Commit):
            continue
        for p in obj.parents:
            if p == ancestor:
                return True
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return False
