"""`sync push`: send a session's committed history to a remote under `refs/sessiondag/<id>/`.

Only what the remote lacks is sent (haves: the remote's main of this session). A push that would
not fast-forward the remote's main is refused (`sync_non_fast_forward`: pull first), never forced;
the ref update carries the old value, so a racing pusher loses cleanly. Before anything is sent the
outgoing objects are checked (checks.py): secrets unless `allow_secrets`, the size limit always.
`dry_run` reports what would be sent and sends nothing. What is sent is durable here first
(`durable`): a power loss cannot roll back a commit the remote holds. What the push leaves locally: the tracking
ref `refs/sessiondag-remotes/<remote>/main` and, if the session had none, its working-dir identity
(session meta, committed).
"""

from __future__ import annotations

import os
import time
from typing import AbstractSet, Callable, NotRequired, Sequence, TYPE_CHECKING, TypedDict, cast

import orjson
from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree, hex_to_sha, sha_to_hex
from dulwich.object_store import BaseObjectStore, MissingObjectFinder
from dulwich.pack import DELTA_TYPES, UnpackedObject, pack_object_chunks
from dulwich.client import GitClient, SendPackResult
from dulwich.repo import Repo

from ..core.checkpoint import NODE_KEY
from ..core.settings import Settings
from ..core.wire_types import SessionPushResult
from ..store.gitstore import MODE_TREE
from . import checks, identity, layout, summary, transport
from .errors import NonFastForwardError, RemoteRejectedError, SyncError
from .history import MAIN, is_ancestor
from .remotes import Remote, bounded

if TYPE_CHECKING:
    from ..store.session import Session
    from ..store.handles import SessionStore

_ZERO = b"0" * 40


class Outgoing(TypedDict):
    """An object the remote lacks, as `outgoing` read it."""
    sha: ObjectID               # hex
    kind: str                   # commit | tree | chunk | meta | index | body | workspace
    name: str                   # its name in its tree (a workspace file: its path)
    size: int
    data: bytes | None          # a blob's data (what the checks read); None for a commit or tree
    type: int                   # its git type number
    raw: bytes                  # its raw data, what the pack carries
    checkpoint: NotRequired[str]    # a workspace file: the checkpoint that holds it


class _Pushed(TypedDict):
    """What every push's result says, before its status (and what a dry run or a push adds)."""
    session_id: str
    remote: str
    commit: str
    old: str | None
    objects: int
    bytes: int
    pushed_at: NotRequired[float]
    sent: NotRequired[list[dict[str, object]]]
DEFER_MERGE_PACKS = 44   # a push's sync point merges small packs only past this many (`durable`)


def _identity_changes(session: Session) -> bool:
    ident = identity.identify(session.info.get("working_dir"))
    return ident is not None and session.graph.extra.get(identity.KEY) != ident and not session.open_turn


def record_identity(session: Session) -> None:
    """Record the working dir's project identity in the session (committed) if it changed and no
    turn is open (a running turn's records are the turn's to commit)."""
    ident = identity.identify(session.info.get("working_dir"))
    if ident is None or session.graph.extra.get(identity.KEY) == ident or session.open_turn:
        return
    session.set_meta(identity.KEY, ident)
    session.commit_turn("sync: working dir identity\n")


def durable(session: Session) -> None:
    """The store's sync point before anything is sent (store/snapshot_sync.py): turn commits leave
    their packs and ref unsynced, and a power loss rolls a session back to its last durable
    snapshot (rebuilding the rest from the journal as new commits). A commit the remote holds must
    never be rolled back, or the next push could not fast-forward: so what a push sends is durable
    first: once every check passed, just before the pack goes out (a refusal changes nothing
    here). Every pack there and the ref (the pushed head or a newer commit) become durable. Under
    the session lock, briefly (fsyncs of the packs written since the last sync). Only durability
    is needed: the merge of small packs is left to the next sync point (a journal rotation) while
    the pack dir holds at most DEFER_MERGE_PACKS packs — twice what the tiered merge keeps (~22
    plus sealed ones) — so auto-pushes after every turn cannot grow it without bound."""
    with session.lock:
        pack_dir = os.path.join(session.git.git_dir, "objects", "pack")
        n = sum(1 for name in os.listdir(pack_dir) if name.endswith(".pack")) if os.path.isdir(pack_dir) else 0
        session.git.sync(merge=n > DEFER_MERGE_PACKS)


def _kind(type_num: int, name: bytes | None) -> str:
    if type_num != Blob.type_num:
        return {Commit.type_num: "commit"}.get(type_num, "tree")
    n = (name or b"").decode("utf-8", "replace")
    if n.endswith(".jsonl"):
        return "chunk"
    if n == "meta.json":
        return "meta"
    if n.endswith(".json"):
        return "index"
    return "body"


def outgoing(repo: Repo, head: bytes, have: bytes | None) -> list[Outgoing]:
    """The objects the remote lacks, each {sha, kind, name, size, data (blobs), type, raw}. A blob
    of a workspace checkpoint is kind "workspace", named by its path and the checkpoint that holds
    it (whatever its name: a working-dir file called meta.json is not the session's)."""
    store = transport.graph_reachability(repo).object_store
    found = list(MissingObjectFinder(store, haves=[ObjectID(have)] if have else [], wants=[ObjectID(head)]))
    raw = read_raw(store, [sha for sha, _hint in found])
    out: list[Outgoing] = []
    for sha, hint in found:
        type_num, data = raw[sha]
        name = hint[1] if hint else None
        out.append({"sha": sha, "kind": _kind(type_num, name), "name": (name or b"").decode("utf-8", "replace"),
                    "size": len(data), "data": data if type_num == Blob.type_num else None,
                    "type": type_num, "raw": data})
    files = workspace_files(store, out)
    for o in out:
        if o["sha"] in files:
            o["kind"] = "workspace"
            o["name"], o["checkpoint"] = files[o["sha"]]
    return out


def read_raw(store: BaseObjectStore, shas: list[ObjectID]) -> dict[ObjectID, tuple[int, bytes]]:
    """sha -> (type, data). Many objects are read pack by pack, each from the pack its index
    names (a lookup by sha probes every pack in turn: a session has many small packs); what no
    pack holds whole (a delta, a loose object) through the store."""
    out: dict[ObjectID, tuple[int, bytes]] = {}
    if len(shas) > 64:
        want = set(shas)
        for p in list(store.packs):
            for bin_sha, offset, _crc in p.index.iterentries():
                sha = sha_to_hex(bin_sha)
                if sha not in want or sha in out:
                    continue
                u = p.data.get_unpacked_object_at(offset)
                if u.pack_type_num not in DELTA_TYPES:
                    out[sha] = (u.pack_type_num, b"".join(u.decomp_chunks))
    for sha in shas:
        if sha not in out:
            out[sha] = store.get_raw(sha)
    return out


def pack_records(objs: list[Outgoing], extra: Sequence[ShaFile]) -> tuple[int, list[UnpackedObject]]:
    """What send_pack streams: the objects `outgoing` read (no second read), each compressed here
    at zlib level 1 — the packs here are level 0 (fast to write), dulwich would recompress at the
    default level; level 1 sends a fifth of the CLI's bytes in a fraction of the time. The record's
    `comp_chunks` (header and zlib data, written as they are) carries it."""
    records = []
    for type_num, data, sha in [(o["type"], o["raw"], o["sha"]) for o in objs] + \
            [(x.type_num, x.as_raw_string(), x.id) for x in extra]:
        u = UnpackedObject(type_num, decomp_chunks=[data], sha=hex_to_sha(sha))
        u.comp_chunks = list(pack_object_chunks(type_num, [data], object_format=DEFAULT_OBJECT_FORMAT,
                                                compression_level=1))
        records.append(u)
    return len(records), records


def workspace_files(store: BaseObjectStore, objs: list[Outgoing]) -> dict[bytes, tuple[str, str]]:
    """blob id -> (path, checkpoint id) for the blobs of the workspace checkpoints (store/
    checkpoints.py: `workspace/files/…` at a commit's root) among `objs`. Only trees being sent are
    walked: one the remote holds brings nothing under it."""
    sending = {o["sha"] for o in objs if o["kind"] == "tree" or o["data"] is not None}
    out: dict[bytes, tuple[str, str]] = {}
    seen: set[bytes] = set()

    def walk(tree_id: bytes, prefix: bytes, ck: str) -> None:
        if tree_id in seen or tree_id not in sending:
            return
        seen.add(tree_id)
        for e in cast(Tree, store[ObjectID(tree_id)]).items():   # a tree being sent
            path = prefix + e.path
            if e.mode == MODE_TREE:
                walk(e.sha, path + b"/", ck)
            elif e.sha in sending and e.sha not in out:
                out[e.sha] = (path.decode("utf-8", "replace"), ck)

    for o in objs:
        if o["kind"] != "commit":
            continue
        root = cast(Tree, store[cast(Commit, store[ObjectID(o["sha"])]).tree])   # a commit's root: a tree
        if b"workspace" not in root:
            continue
        ck = root[b"workspace"][1]
        if ck in sending and b"files" in (ckt := cast(Tree, store[ck])):
            walk(ckt[b"files"][1], b"", ck.decode())
    return out


def _checkpoint_nodes(session: Session) -> dict[str, str]:
    """checkpoint id -> the user node whose turn it ends (the first such)."""
    out: dict[str, str] = {}
    for c in session.graph.nodes.values():
        ck = (c.metadata or {}).get(NODE_KEY) if c.role == "user" else None
        if isinstance(ck, dict) and ck.get("id"):
            out.setdefault(ck["id"], c.id)
    return out


def _blob(o: Outgoing) -> bytes:
    """The data of a chunk, body, meta or workspace object: a blob's (`outgoing` gives them theirs)."""
    return cast(bytes, o["data"])


def check(objs: list[Outgoing], settings: Settings, *, allow_secrets: bool, limit: int,
          turns: Callable[[], dict[str, str]] = dict) -> None:
    """Refuse what must not leave (checks.py). `turns()`: checkpoint id -> the user node of its
    turn (to name the node a workspace file came with)."""
    chunks = [_blob(o) for o in objs if o["kind"] == "chunk"]
    for o in objs:
        if o["size"] > limit:
            node = checks.biggest_node(_blob(o)) if o["kind"] == "chunk" else \
                checks.referencing_node(o["sha"].decode(), chunks) if o["kind"] == "body" else \
                turns().get(o["checkpoint"]) if o["kind"] == "workspace" else None
            what = f"workspace file {o['name']}" if o["kind"] == "workspace" else o["kind"]
            raise checks.too_large(o["size"], limit, node, what)
    if allow_secrets:
        return
    keys = checks.configured_keys(settings)
    for o in objs:
        if o["kind"] == "chunk":
            checks.scan_chunk(_blob(o), keys)
        elif o["kind"] == "body":
            checks.scan_text(_blob(o), keys, checks.referencing_node(o["sha"].decode(), chunks), "spilled body")
        elif o["kind"] == "meta":
            checks.scan_text(_blob(o), keys, None, "meta.json")
        elif o["kind"] == "workspace" and checks.find_in(_blob(o), keys):
            checks.scan_text(_blob(o), keys, turns().get(o["checkpoint"]), f"workspace file {o['name']}")


def commit_finished_turn(s: Session) -> None:
    """Commit what a finished turn left uncommitted; nothing while a node is running."""
    with s.lock:
        if s.open_turn and not any(c.status == "running" for c in s.graph.nodes.values()):
            s.commit_turn()


def push(store: SessionStore, remote: Remote, session_id: str, settings: Settings, *, allow_secrets: bool = False,
         dry_run: bool = False, commit_first: bool = False) -> SessionPushResult:
    """Push the session's last commit. `commit_first` (a push the user asked for): records of a
    finished turn not committed yet (a compaction, a branch name written between turns) are committed
    first, as a pull does, so what was acknowledged is what goes; with a turn running, its records
    wait for its own commit. The automatic push runs after a commit and passes False."""
    sid = layout.check_ref_id(session_id)
    s = store.session(sid)
    if commit_first and not dry_run:
        commit_finished_turn(s)
    if not dry_run and _identity_changes(s):
        # checked first (a refused push changes nothing here), then recorded and pushed with it
        push(store, remote, sid, settings, allow_secrets=allow_secrets, dry_run=True)
        record_identity(s)
    main_ref, summary_ref = layout.main_ref(sid), layout.summary_ref(sid)
    repo = Repo(os.path.join(s.path, "git"))
    try:
        head = repo.refs[MAIN] if MAIN in repo.refs else None
        if head is None:
            raise SyncError(f"session {sid!r} has no commit yet: nothing to push", session_id=sid)
        commit = cast(Commit, repo[head])   # the session's main names a commit
        blob = Blob.from_string(summary.build(s, head, float(commit.commit_time), _turn(repo, head)))
        state: _State = {}

        def plan(refs: dict[bytes, bytes]) -> dict[bytes, bytes]:
            old = refs.get(main_ref)
            old = None if old in (None, _ZERO) else old
            state["old"] = old
            if old is not None and not is_ancestor(repo.object_store, old, head):
                raise NonFastForwardError(
                    f"the remote's {main_ref.decode()} has commits this session lacks: pull first "
                    f"(sessiondag sync pull {remote.name or remote.url} --session {sid})", session_id=sid,
                    remote=remote.url)
            objs = outgoing(repo, head, old) if old != head else []
            check(objs, settings, allow_secrets=allow_secrets, limit=settings.max_object_bytes,
                  turns=lambda: _checkpoint_nodes(s))
            state["objects"] = objs
            if dry_run:
                raise _DryRun()
            if old != head:
                durable(s)
            want: dict[bytes, bytes] = {main_ref: head, summary_ref: blob.id}
            state["noop"] = all(refs.get(k) == v for k, v in want.items())
            return want

        def pack(have: AbstractSet[ObjectID], want: AbstractSet[ObjectID], *, ofs_delta: bool = True,
                 progress: Callable[[bytes], None] | None = None) -> tuple[int, list[UnpackedObject]]:
            return pack_records(state["objects"], [blob])

        def send(client: GitClient, path: str) -> SendPackResult:
            # dulwich's base class annotates less than its clients take: the path as bytes (each
            # takes the str get_transport_and_path gives, as `fetch` says), the refs as its NewTypes
            # of bytes, the records as an iterator (it iterates the list once)
            return client.send_pack(path, plan, pack)  # type: ignore[arg-type]

        try:
            result = transport.call(remote.url, "push", send, bounded(remote, settings).bounds)
        except _DryRun:
            result = None
        objs = state.get("objects", [])
        out: _Pushed = {"session_id": sid, "remote": remote.name or remote.url, "commit": head.decode(),
               "old": old.decode() if (old := state.get("old")) else None, "objects": len(objs),
               "bytes": sum(o["size"] for o in objs)}
        if dry_run:
            return {**out, "status": "dry_run", "sent": [{"kind": o["kind"], "name": o["name"], "sha": o["sha"].decode(),
                                                          "size": o["size"]} for o in objs]}
        errors = {k.decode(): v for k, v in (getattr(result, "ref_status", None) or {}).items() if v}
        if errors:
            text = "; ".join(f"{k}: {v}" for k, v in errors.items())
            if any(w in text for w in ("non-fast-forward", "fetch first", "stale", "unable to set", "lock")):
                raise NonFastForwardError(f"the remote moved during the push: pull first ({text})",
                                          session_id=sid, remote=remote.url)
            raise RemoteRejectedError(f"the remote refused the push: {text}", session_id=sid, remote=remote.url)
        repo.refs[layout.tracking_ref(remote.key)] = head
        return {**out, "status": "up_to_date" if state.get("noop") else "pushed", "pushed_at": time.time()}
    finally:
        repo.close()


class _State(TypedDict, total=False):
    """What `plan` leaves for `pack` and the result."""
    old: bytes | None
    objects: list[Outgoing]
    noop: bool


class _DryRun(Exception):
    pass


def _turn(repo: Repo, head: bytes) -> int:
    try:
        tree = cast(Tree, repo[cast(Commit, repo[ObjectID(head)]).tree])   # anything else: the except below
        return int(orjson.loads(cast(Blob, repo[tree[b"meta.json"][1]]).data).get("turn", 0))
    except Exception:
        return 0
