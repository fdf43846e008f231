"""The trees of a checkpoint (store/checkpoints.py): built from a snapshot's flat paths, and from
the last checkpoint's trees when this process has them, so that only the directories on the way to
a changed path are rebuilt."""

from __future__ import annotations

import weakref
from itertools import compress
from operator import is_not
from typing import Mapping, Union

from dulwich.object_store import BaseObjectStore
from dulwich.objects import ObjectID, ShaFile, Tree

from ..core.checkpoint import Entry
from .gitstore import MODE_TREE, GitSnapshots


class TreeMemo:
    """The trees of the last checkpoint a repository stored, by directory (their ids, and the tree
    objects this process built): the next one rebuilds only the directories on the way to a path
    that changed (hashing a thousand unchanged trees per turn would cost more than the walk), from
    the tree objects kept here (not read back from a pack). `ids`: the trees (and info blobs, top
    trees) the checkpoints of this process stored; a rebuilt tree named there is not stored again,
    and one that is not is taken for new without asking the repository (each miss there costs a
    search of every pack): a directory that comes back to a state only a former process stored is
    then stored a second time, in a pack of its own (git allows it; a repack keeps one)."""

    def __init__(self, entries: Mapping[bytes, Entry], ids: set[bytes] | None = None):
        self.entries = entries
        self.trees: dict[bytes, bytes] = {}
        self.objs: dict[bytes, Tree] = {}
        self.ids: set[bytes] = set() if ids is None else ids
        self.changed: int | None = None


_Dir = dict[bytes, Union["_Dir", Entry]]   # a directory being built: its names, each a directory or a file

memos: "weakref.WeakKeyDictionary[GitSnapshots, TreeMemo]" = weakref.WeakKeyDictionary()
"""The last checkpoint's trees, per repository this process wrote one to."""


def moved_paths(old: Mapping[bytes, Entry], new: Mapping[bytes, Entry]) -> list[bytes]:
    """The paths whose tree entry differs (mode or blob), added or gone."""
    out = []
    get = old.get
    # most entries are the very object of the last snapshot (the stat cache's row): a C loop finds
    # the others, and only those are compared
    added = 0
    for p in compress(new, map(is_not, map(get, new), new.values())):
        e, o = new[p], get(p)
        if o is None:
            added += 1
            out.append(p)
        elif o.sha != e.sha or o.mode != e.mode:
            out.append(p)
    if len(old) + added != len(new):        # some path of `old` is gone
        out.extend(p for p in old if p not in new)
    return out


def build(entries: Mapping[bytes, Entry], store: BaseObjectStore, new: list[ShaFile], memo: TreeMemo | None,
          fresh: TreeMemo) -> ObjectID:
    """The tree of `entries` (flat paths), each tree not in `store` appended to `new`; its id. With
    `memo` (the last checkpoint's trees), only the directories on the way to a changed path are
    rebuilt, each from its previous tree with the changed names patched in: the cost follows what
    changed, not the size of the tree."""
    if memo is None:
        return build_all(entries, store, new, fresh)
    moved = moved_paths(memo.entries, entries)
    fresh.changed = len(moved)
    if not memo.trees and memo.entries:      # read back from disk: its trees are not known here
        return build_all(entries, store, new, fresh)
    fresh.trees.update(memo.trees)
    fresh.objs.update(memo.objs)
    names: dict[bytes, set[bytes]] = {b"": set()}   # dirty directory -> its names that changed
    for p in moved:
        child = p
        while True:
            d, _, name = child.rpartition(b"/")
            known = d in names               # then its parents are recorded already
            names.setdefault(d, set()).add(name)
            if known or not d:
                break
            child = d
    built: dict[bytes, ObjectID | None] = {}
    for d in sorted(names, key=lambda x: x.count(b"/") + (1 if x else 0), reverse=True):
        old = memo.trees.get(d)
        t = Tree()
        if old is not None:
            was = memo.objs.get(d)
            prev = was if was is not None and was.id == old else store[ObjectID(old)]
            assert isinstance(prev, Tree)   # a tree this process built (memo.trees), kept or stored
            for te in prev.items():
                t[te.path] = (te.mode, te.sha)
        for name in names[d]:
            full = d + b"/" + name if d else name
            e = entries.get(full)
            if e is not None:
                t[name] = (e.mode, ObjectID(e.sha.encode()))
            elif (sub := built.get(full)) is not None:
                t[name] = (MODE_TREE, sub)
            elif name in t:
                del t[name]
        if not t.items() and d:
            built[d] = None
            for k in [k for k in fresh.trees if k == d or k.startswith(d + b"/")]:
                del fresh.trees[k]     # gone: a directory made again later starts empty
                fresh.objs.pop(k, None)
            continue
        if t.id != old and t.id not in fresh.ids:
            new.append(t)
        built[d] = fresh.trees[d] = t.id
        fresh.objs[d] = t
    top = built[b""]
    assert top is not None  # b"" is always in `names`, and only a directory other than the root is dropped
    return top


def build_all(entries: Mapping[bytes, Entry], store: BaseObjectStore, new: list[ShaFile],
              fresh: TreeMemo) -> ObjectID:
    """Every tree of `entries`, from nothing (the first checkpoint of a process)."""
    root: _Dir = {}
    for path, e in entries.items():
        node = root
        parts = path.split(b"/")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = e

    def tree(node: _Dir, path: bytes) -> ObjectID:
        t = Tree()
        for name, v in node.items():
            if isinstance(v, dict):
                t[name] = (MODE_TREE, tree(v, path + b"/" + name if path else name))
            else:
                t[name] = (v.mode, ObjectID(v.sha.encode()))
        if t.id not in store:
            new.append(t)
        fresh.trees[path] = t.id
        fresh.objs[path] = t
        return t.id

    return tree(root, b"")
