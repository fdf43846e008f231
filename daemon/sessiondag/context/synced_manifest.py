"""A render manifest recorded on another machine, put into this session's seq numbering.

A manifest cuts by seq: the graph as of its `last_seq`, code results before `aged_before_seq`
aged. Those are seqs of the machine that recorded it. A pull (sync/merge.py) renumbers the nodes
it adds after the local maximum and keeps each one's original seq and the remote commit it came
with in `metadata.sync_origin` = {seq, remote, commit}. That commit is in this session's objects
(the pull installed it) and is a snapshot numbered as the recording machine numbered its nodes:
read it, and each node the manifest saw (seq ≤ last_seq there) is known by id, so are the aged
ones; the cuts are then the local seqs that select the same nodes here.

Seqs only grow along predecessor and caller edges on every machine, and a pull appends what it
adds in the remote's order after everything local, so the nodes a manifest saw come before the
later ones its render could reach here: the local cuts select them exactly. A translation that
would not separate them (a code node aged there but not here, or the reverse) is a ManifestError:
the replay is refused rather than sent with other bytes (only the code nodes a render of the
manifest's head may show count: those on its chain or called from it).

A manifest passed as it is (render_messages / session/render with `manifest`, copied from a
node's `metadata.render_manifest`) names no node: `recorded_localized` finds the node(s) that
recorded it where the runtime appends them — after its head (by predecessor or caller) — and
translates it as a replay of that node would. Nodes there recording it in numberings that
disagree are a ManifestError (which numbering it is in cannot be told); none: it is taken as in
this session's seqs.
"""

from __future__ import annotations

from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.session import Session
from .aging import AGED_KEY, Manifest, ManifestError

ORIGIN_KEY = "sync_origin"   # node metadata: {seq, remote, commit} where a pull renumbered it


def localized(session: Session, node: Call, manifest: Manifest) -> Manifest:
    """`manifest` (node's own) with `last_seq` and `aged_before_seq` in this session's numbering;
    unchanged for a node that was not renumbered by a pull."""
    origin = node.metadata.get(ORIGIN_KEY)
    if not isinstance(origin, dict) or not isinstance(origin.get("commit"), str):
        return manifest
    last, aged = manifest.get("last_seq"), manifest.get(AGED_KEY)
    if not isinstance(last, int) or not isinstance(aged, int):
        return manifest   # check_manifest refuses it
    theirs = _their_seqs(session, origin["commit"])
    if theirs.get(node.id) != origin.get("seq"):
        raise ManifestError(f"node {node.id!r}: the snapshot {origin['commit']} it came with does not number it "
                            f"{origin.get('seq')!r}: its manifest cannot be put into this session's seqs")
    g = session.graph
    seen = {i: s for i, s in theirs.items() if s <= last and i in g.nodes}
    out = dict(manifest)
    out["last_seq"] = max((g.nodes[i].seq for i in seen), default=0)
    if aged > 0:
        near = _on_chain(g, manifest.get("head_id"))
        code = [(s, g.nodes[i].seq) for i, s in seen.items() if g.nodes[i].role == "code" and _under(g, i, near)]
        fresh = [here for s, here in code if s >= aged]
        old = [here for s, here in code if s < aged]
        cut = min(fresh, default=out["last_seq"] + 1)
        if old and max(old) >= cut:
            raise ManifestError(f"node {node.id!r}: its manifest's aging cut does not fall between the same "
                                f"nodes in this session's seqs: it cannot be replayed exactly here")
        out[AGED_KEY] = cut
    return out


def recorded_localized(session: Session, manifest: Manifest | None) -> Manifest | None:
    """`manifest` given without its node: in this session's seqs if a node after its head that
    a pull renumbered recorded it (see the module doc); else unchanged."""
    if not isinstance(manifest, dict):
        return manifest
    head = manifest.get("head_id")
    if not isinstance(head, str):
        return manifest
    with session.lock:
        g = session.graph
        if head not in g.nodes:
            return manifest
        near = dict.fromkeys(g.children_by_predecessor(head) + g.children_by_caller(head))
        recorders = [g.nodes[i] for i in near if g.nodes[i].metadata.get("render_manifest") == manifest]
    outs: list[Manifest] = []
    for node in recorders:
        out = localized(session, node, manifest)
        if out not in outs:
            outs.append(out)
    if len(outs) > 1:
        raise ManifestError(f"nodes {[n.id for n in recorders]} recorded this manifest in numberings that "
                            f"disagree here: replay one of them by its node id")
    return outs[0] if outs else manifest


def _on_chain(g: Graph, head: object) -> set[str]:
    """The predecessor chain of `head` (what a render walks)."""
    out: set[str] = set()
    cur = g.nodes.get(head) if isinstance(head, str) else None
    while cur is not None and cur.id != ROOT and cur.id not in out:   # ROOT is never expanded
        out.add(cur.id)
        cur = g.nodes.get(cur.predecessor) if cur.predecessor is not None else None
    return out


def _under(g: Graph, node_id: str, chain: set[str]) -> bool:
    """Is the node on `chain` or called (at any depth) by a node on it: one a render may show?"""
    seen: set[str] = set()
    cur = g.nodes.get(node_id)
    while cur is not None and cur.id not in seen:
        if cur.id in chain:
            return True
        seen.add(cur.id)
        cur = g.nodes.get(cur.caller) if cur.caller not in (None, ROOT) else None
    return False


def _their_seqs(session: Session, commit: str) -> dict[str, int]:
    """id -> seq in the snapshot `commit` (one of this session's objects)."""
    try:
        with session.lock:
            _meta, nodes = session.git.load(commit.encode("ascii"))
    except Exception as e:  # not there (a session copied without it), not a snapshot
        raise ManifestError(f"the snapshot {commit} a synced node came with cannot be read: {e}") from None
    return {d["id"]: d["seq"] for d in nodes
            if isinstance(d.get("id"), str) and isinstance(d.get("seq"), int) and not isinstance(d["seq"], bool)}
