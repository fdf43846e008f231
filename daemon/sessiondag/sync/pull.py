"""`sync pull` / `sync clone`: a remote session brought here — cloned when it is new here,
merged (merge.py) when both sides have it, nothing when the remote holds nothing we lack.

Every path fetches into a quarantine (fetch.py), reads the fetched commit as hostile data and
checks every node it would add before one byte reaches the session; any refusal (conflict,
invalid data, unreachable remote) leaves the local session exactly as it was.

A cloned session binds to `working_dir` (default: the current dir) when that is a checkout of the
project its identity names (identity.py), without an opt-in; otherwise it keeps the working dir it
was recorded with, and resuming it elsewhere takes the usual opt-in or remap (recorded as a rebind).
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import NotRequired, Protocol, TYPE_CHECKING, TypedDict

import orjson
from dulwich.objects import ObjectID
from dulwich.refs import HEADREF
from dulwich.repo import Repo

from ..core.errors import SessionExistsError
from ..core.graph import Graph
from ..core.model import ROOT
from ..core.wire_types import SessionPullResult
from ..store.durable_files import fsync_dir, write_file_atomic
from ..store.gitstore import GitSnapshots
from ..store.rebuild import rebuild
from ..store.session import SCHEMA_VERSION
from . import identity, layout, merge, received_pack, summary, transport, untrusted_nodes
from .errors import NotOnRemoteError, RemoteDataError, SyncError
from .fetch import Quarantine, RemoteMeta, RemoteNode, read_objects, read_snapshot
from .history import MAIN, is_ancestor
from .remotes import Remote, bounded

if TYPE_CHECKING:
    from ..store.handles import SessionStore


class _Holds(Protocol):
    """Objects a blob id is looked up in: an object store, or received_pack.Objects."""
    def __contains__(self, sha: ObjectID, /) -> bool: ...


class _Pulled(TypedDict):
    """What a pull's result says of every pull, before its status (and what a merge adds)."""
    session_id: str
    remote: str
    commit: str
    added: NotRequired[int]
    merge_commit: NotRequired[str | None]
    head_id: NotRequired[str]
    nodes: NotRequired[int]
    working_dir: NotRequired[str | None]
    bytes: NotRequired[int]


def remote_head(remote: Remote, sid: str, refs: dict[bytes, bytes] | None = None) -> bytes:
    refs = transport.remote_refs(remote.url, remote.bounds) if refs is None else refs
    entry = layout.sessions_of(refs).get(sid)
    if not entry or "main" not in entry:
        raise NotOnRemoteError(f"the remote {remote.name or remote.url} holds no session {sid!r}", session_id=sid)
    return entry["main"]


def _check_blobs(objects: _Holds, blobs: list[ObjectID]) -> None:
    missing = [b for b in blobs if b not in objects]
    if missing:
        raise RemoteDataError(f"the remote session references bodies it did not send: {missing[0].decode()}")


def _validate_whole(meta: RemoteMeta, nodes: list[RemoteNode]) -> Graph:
    """A snapshot to clone: every node checked as an append from ROOT would be, in seq order (in
    bulk: Graph.from_untrusted); its graph."""
    if not nodes or nodes[0].get("id") != ROOT:
        raise RemoteDataError("the remote snapshot does not start with ROOT")
    try:
        calls = untrusted_nodes.calls_of(nodes)
        for a, b in zip(calls, calls[1:]):
            if b.seq <= a.seq:
                raise RemoteDataError(f"remote node {b.id!r}: seqs are not increasing")
        g = Graph.from_untrusted(calls, head_id=meta["head_id"])
    except RemoteDataError:
        raise
    except Exception as e:
        raise RemoteDataError(f"the remote snapshot holds an invalid node: {e}") from None
    if meta["head_id"] not in g.nodes:
        raise RemoteDataError(f"the remote head {meta['head_id']!r} is not a node")
    return g


def clone(store: SessionStore, remote: Remote, session_id: str, *, working_dir: str | None = None,
          refs: dict[bytes, bytes] | None = None) -> SessionPullResult:
    sid = layout.check_ref_id(session_id)
    remote = bounded(remote, store.settings())
    if store.exists(sid):
        raise SessionExistsError(sid)
    if refs is not None:
        remote_head(remote, sid, refs)     # not there: refused before a connection
    q = Quarantine(store.state_dir)
    tmp = os.path.join(store.sessions_dir, f".new-{sid}-{os.getpid()}-{threading.get_ident()}")
    try:
        head, got = received_pack.fetch(remote.url, lambda seen: remote_head(remote, sid, seen if refs is None else refs),
                                        remote.bounds, remote.bounds.max_bytes)  # checked, in memory
        objects = received_pack.Objects(got.objects)
        meta, nodes, blobs = read_objects(objects, head, sid)
        _check_blobs(objects, blobs)
        g = _validate_whole(meta, nodes)
        got.write_into(os.path.join(q.path, "objects"))
        q.repo.refs[MAIN] = ObjectID(head)
        q.repo.refs.set_symbolic_ref(HEADREF, MAIN)
        q.repo.close()
        os.mkdir(tmp, 0o700)
        os.rename(q.path, os.path.join(tmp, "git"))
        with open(os.path.join(tmp, "git", "description"), "w") as f:
            f.write("sessiondag session\n")
        if not rebuild(tmp, sid, SCHEMA_VERSION):
            raise RemoteDataError("the remote session could not be rebuilt here (schema or meta)")
        bound = _bind(tmp, meta, working_dir, _title(meta, g))
        Repo(os.path.join(tmp, "git")).refs[layout.tracking_ref(remote.key)] = ObjectID(head)
        try:
            os.rename(tmp, store.path_of(sid))
        except OSError:
            raise SessionExistsError(sid) from None
        fsync_dir(store.sessions_dir)
    except BaseException:
        q.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"session_id": sid, "status": "cloned", "commit": head.decode(), "nodes": len(nodes),
            "working_dir": bound, "remote": remote.name or remote.url}


def _title(meta: RemoteMeta, g: Graph) -> str:
    """The title `sessions list` would give the clone: its meta `title`, else its first message."""
    named = meta["extra"].get(summary.TITLE_KEY)
    try:
        return summary.one_line(named if isinstance(named, str) and named.strip() else summary.first_user_text(g))
    except Exception:  # content that does not render as text: no title
        return ""


def _bind(path: str, meta: RemoteMeta, working_dir: str | None, title: str) -> str | None:
    """session.json for a clone: its working dir here when this is the same project, else as
    recorded; its title (what session/list shows, as for a session begun here) when it has none."""
    info_path = os.path.join(path, "session.json")
    with open(info_path, "rb") as f:
        info = orjson.loads(f.read())
    changed = False
    here = os.path.realpath(working_dir or os.getcwd())
    if identity.same_project(meta["extra"].get(identity.KEY), here):
        info["working_dir"], changed = here, True
    if title and not isinstance(info.get("title"), str):
        info["title"], changed = title, True
    if changed:
        write_file_atomic(info_path, orjson.dumps(info, option=orjson.OPT_INDENT_2))
    bound: str | None = info.get("working_dir")
    return bound


def pull(store: SessionStore, remote: Remote, session_id: str, *, working_dir: str | None = None,
         refs: dict[bytes, bytes] | None = None) -> SessionPullResult:
    sid = layout.check_ref_id(session_id)
    remote = bounded(remote, store.settings())
    if not store.exists(sid):
        return clone(store, remote, sid, working_dir=working_dir, refs=refs)
    head = remote_head(remote, sid, refs)
    s = store.session(sid)
    git_dir = os.path.join(s.path, "git")
    repo = Repo(git_dir)
    try:
        local = repo.refs[MAIN] if MAIN in repo.refs else None
        tracked = repo.refs[layout.tracking_ref(remote.key)] if layout.tracking_ref(remote.key) in repo.refs else None
        out: _Pulled = {"session_id": sid, "remote": remote.name or remote.url, "commit": head.decode()}
        if local is not None and is_ancestor(repo.object_store, head, local):
            repo.refs[layout.tracking_ref(remote.key)] = ObjectID(head)
            return {**out, "status": "up_to_date", "added": 0}
    finally:
        repo.close()
    q = Quarantine(store.state_dir, os.path.join(git_dir, "objects"), local, [tracked] if tracked else [])
    try:
        q.fetch(remote.url, head, remote.bounds)
        local_objects = Repo(git_dir)
        try:
            meta, nodes, blobs = read_snapshot(q.path, head, sid, known=local_objects.object_store)
        finally:
            local_objects.close()
        _check_blobs(q.repo.object_store, blobs)
        fast_forward = local is not None and is_ancestor(q.repo.object_store, local, head)
        with s.lock:
            g = s.graph
            running = [c.id for c in g.nodes.values() if c.status == "running"]
            if running:
                raise SyncError(f"session {sid!r} has a turn running (node {running[0]!r}): pull after it ends",
                                session_id=sid, node_id=running[0])
            if s.open_turn:
                s.commit_turn()
            committed_head = _meta_head(git_dir)
            ff = fast_forward and _committed(git_dir) == local and g.head_id == committed_head
            p = merge.plan(g, meta, nodes, origin={"remote": remote.name or remote.url, "commit": head.decode()},
                           fast_forward=ff)
            merge.check(g, p)
            received = q.install_into(os.path.join(git_dir, "objects"))
            message = (f"sync: merge {remote.name or remote.url} {head.decode()[:12]}\n\n"
                       f"{len(p.new)} node(s) added, {p.shared} shared; head {p.head or g.head_id}\n")
            sha = merge.apply(s, p, message=message, merge_parent=head,
                              merged={"remote": remote.name or remote.url, "commit": head.decode()})
    finally:
        q.close()
    repo = Repo(git_dir)
    try:
        repo.refs[layout.tracking_ref(remote.key)] = ObjectID(head)
    finally:
        repo.close()
    return {**out, "status": "fast_forward" if ff else "merged", "added": len(p.new), "merge_commit": sha,
            "head_id": s.graph.head_id, "bytes": received}


def _committed(git_dir: str) -> bytes | None:
    repo = Repo(git_dir)
    try:
        return repo.refs[MAIN] if MAIN in repo.refs else None
    finally:
        repo.close()


def _meta_head(git_dir: str) -> str | None:
    head = _committed(git_dir)
    if head is None:
        return None
    git = GitSnapshots(git_dir)
    try:
        meta, _ = git.load_meta(head)
        return meta.get("head_id")
    finally:
        git.close()
