"""Nodes opened from a snapshot keep their stored line as body and encoding until read; reads,
encodings and updates racing in threads never leave a stale body or a stale cached encoding."""

import threading

import orjson

from sessiondag import ROOT, Call
from sessiondag.core import model
from sessiondag.store import SessionStore, node_index


def _session(tmp_path, n=120):
    store = SessionStore(tmp_path / "state")
    store.start_session("lazy", working_dir=str(tmp_path))
    s = store.session("lazy")
    head = ROOT
    for i in range(n):
        c = s.append(Call("user" if i % 2 == 0 else "llm", "m", input={"i": i}, output=f"body {i} é\n",
                          predecessor=head, metadata={"i": i}, status="running" if i == 5 else "completed"))
        head = c.id
        if i % 25 == 24:
            s.commit_turn()
    s.commit_turn()
    store.close()
    return SessionStore(tmp_path / "state")


def test_opened_nodes_hold_their_stored_line_until_read(tmp_path):
    store = _session(tmp_path)
    s = store.session("lazy")
    nodes = s.get_branch()
    assert all(c._metadata is model._LAZY for c in nodes)
    # committed chunks have indexes: their bodies are still in storage, one deferred read per chunk
    deferred = {id(c._raw): c._raw for c in nodes if isinstance(c._raw, node_index.DeferredChunk)}
    assert len(deferred) == 5 and all(isinstance(c._raw, (bytes, node_index.DeferredChunk)) for c in nodes)
    assert orjson.loads(nodes[0].encoded())["output"] == "body 0 é\n"  # reads its chunk, once:
    assert all(isinstance(c._raw, bytes) for c in nodes[:25])  # every node of that chunk has its line
    assert all(isinstance(c._raw, node_index.DeferredChunk) for c in nodes[25:50])  # others wait
    assert nodes[0]._metadata is model._LAZY and nodes[1]._metadata is model._LAZY  # still not parsed
    running = nodes[5]
    assert running.status == "running" and running._metadata is model._LAZY
    s.update(running.id, status="completed")  # a status-only change must drop the stored line
    assert orjson.loads(running.encoded())["status"] == "completed"
    assert orjson.loads(s.get_branch()[5].encoded()) == running.to_dict()
    nodes = s.get_branch()
    assert [orjson.loads(c.encoded()) for c in nodes] == [c.to_dict() for c in nodes]
    assert nodes[3].output == "body 3 é\n" and nodes[3].metadata == {"i": 3}
    # the graph's skeleton shares strings: predecessor ids are the id objects of the nodes they name
    assert all(b.predecessor is a.id for a, b in zip(nodes, nodes[1:]))
    store.close()


def test_reads_racing_updates_leave_no_stale_body_or_encoding(tmp_path):
    store = _session(tmp_path)
    s = store.session("lazy")
    ids = [c.id for c in s.get_branch()]
    stop = threading.Event()
    errors = []

    def reader():
        try:
            while not stop.is_set():
                for c in s.graph.nodes.values():
                    c.encoded()
                    c.output, c.metadata  # noqa: B018 - decode
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for k, nid in enumerate(ids):
            s.update(nid, output=f"new {k}", metadata={"k": k})
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    g = s.graph
    for k, nid in enumerate(ids):
        c = g.nodes[nid]
        assert c.output == f"new {k}" and c.metadata["k"] == k
        assert orjson.loads(c.encoded()) == c.to_dict()
    s.commit_turn()
    store.close()
    fresh = SessionStore(tmp_path / "state").session("lazy")
    assert [c.to_dict() for c in fresh.get_branch()] == [g.nodes[i].to_dict() for i in ids]


def test_reads_in_chunk_order_read_the_next_chunks_ahead(tmp_path):
    """A read of a load's first chunk, or of the chunk after the one read last (a whole branch
    read or rendered in order), has the reader's thread read the pending chunks after it ahead: their
    bytes wait on their chunk, the bytes the chunk's own read gets, until one of its nodes is read.
    A read out of order reads its chunk alone and reads nothing ahead, so a node here and there
    loads no more than its chunk."""
    store = _session(tmp_path)
    s = store.session("lazy")
    nodes = s.get_branch()
    reader = s.git.bodies
    chunks = {c._raw.pos: c._raw for c in nodes if isinstance(c._raw, node_index.DeferredChunk)}

    def pending():
        return sorted({c._raw.pos for c in nodes if isinstance(c._raw, node_index.DeferredChunk)})

    def ahead():
        assert reader.settle(60)
        return sorted(p for p, x in chunks.items() if x.ahead is not None)
    assert pending() == [0, 1, 2, 3, 4]
    nodes[60].encoded()  # chunk 2, first read: alone
    assert pending() == [0, 1, 3, 4] and ahead() == []
    nodes[30].encoded()  # chunk 1: not after chunk 2, alone
    assert pending() == [0, 3, 4] and ahead() == []
    nodes[0].encoded()  # chunk 0, the load's first: the pending chunks after it are read ahead
    assert pending() == [3, 4] and ahead() == [3, 4]
    assert [chunks[p].ahead for p in (3, 4)] == [reader.read(chunks[p].sha) for p in (3, 4)]
    nodes[80].encoded()  # chunk 3: its nodes take the bytes read ahead
    assert pending() == [4] and ahead() == [4]
    assert [orjson.loads(c.encoded()) for c in nodes] == [c.to_dict() for c in nodes]
    assert pending() == [] and ahead() == []
    store.close()
    # a reopen is a new load: its chunks are counted from 0 again, and read alone at first
    s = SessionStore(tmp_path / "state").session("lazy")
    nodes = s.get_branch()
    reader = s.git.bodies
    chunks = {c._raw.pos: c._raw for c in nodes if isinstance(c._raw, node_index.DeferredChunk)}
    assert pending() == [0, 1, 2, 3, 4]
    nodes[-1].encoded()
    assert pending() == [0, 1, 2, 3] and ahead() == []
    nodes[0].encoded()
    assert pending() == [1, 2, 3] and ahead() == [1, 2, 3]

