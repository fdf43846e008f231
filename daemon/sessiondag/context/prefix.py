"""Prefix memos: render one more turn without re-rendering the history before it.

A memo holds, for the session's last walked chain (RenderCache.spine), the admitted nodes of each
chain position in order, and per wire format the messages they rendered to, with cumulative ends per
position. A render of a head whose chain shares a prefix with the memo keeps that prefix and renders
only the positions after it; so does the message memo. The memo is cut back to the first position an
invalidation touched: a chain walk that left the prefix, or a write under an anchor on it (the
cache's listener lowers `valid_upto`), or — for messages — a moved aging boundary (cut at the first
position holding a node at or past the lower of the two boundaries).

Used only for current, top-level renders (no frame, manifest at the graph's last_seq) whose chunks
come in seq order; everything else takes the plain path in render.py. Both paths give equal output.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Callable

from itertools import islice, repeat
from operator import attrgetter, lt

from ..core.gc_pause import gc_paused
from ..core.model import Call
from .encoded_messages import Message
from .stored import Noted, meta_has, scan_run

# what a chain position gives `extend` (chunk_at): (its admitted nodes, lowest seq, highest seq,
# depends on the head, is the summary) — or, for a position that admits its chain node alone, the node
Chunk = tuple[list[Call], int | None, int | None, bool, bool]
# A rendered message as a kind's memo keeps it (MsgMemo): a wire message (encoded_messages.Message)
# or, for a kind that is encoded, its JSON bytes. The kind (the memo's key) decides which, and only
# a kind of messages that merge (anthropic: dicts) is read into, so the lists hold Any.

_seq = attrgetter("seq")

MERGE_ROLES = ("user", "assistant")
BULK = 2000  # positions: a (re)build this large runs with the cyclic GC paused

class MsgMemo:
    __slots__ = ("aging", "msgs", "ends", "merged")

    def __init__(self, aging: tuple[int, int]):
        self.aging = aging
        self.msgs: list[Any] = []
        self.ends: list[int] = []              # cumulative message count after each position
        self.merged: dict[int, list[tuple[int, Any]]] = {}  # msg index -> [(position, message before merge)]

    @property
    def n(self) -> int:
        return len(self.ends)

    def trim(self, k: int) -> None:
        if k >= len(self.ends):
            return
        cut = self.ends[k - 1] if k else 0
        del self.msgs[cut:]
        del self.ends[k:]
        for idx in [i for i in self.merged if i >= cut]:
            del self.merged[idx]
        hist = self.merged.get(cut - 1)
        if hist:
            for j, (pos, before) in enumerate(hist):
                if pos >= k:
                    self.msgs[cut - 1] = before
                    del hist[j:]
                    break
            if not hist:
                del self.merged[cut - 1]

    def prefix(self, k: int) -> list[Any]:
        """The messages of positions [0, k) as they were before later positions merged into them."""
        cut = self.ends[k - 1] if k else 0
        out = self.msgs[:cut]
        for pos, before in self.merged.get(cut - 1, ()):
            if pos >= k:
                out[-1] = before
                break
        return out

    def append_chunk(self, pos: int, chunk: list[Any], merge: bool) -> None:
        msgs = self.msgs
        if merge and chunk and msgs and msgs[-1]["role"] == chunk[0]["role"] and chunk[0]["role"] in MERGE_ROLES:
            prev = msgs[-1]
            self.merged.setdefault(len(msgs) - 1, []).append((pos, prev))
            msgs[-1] = {"role": prev["role"], "content": list(prev["content"]) + list(chunk[0]["content"])}
            msgs.extend(chunk[1:])
        else:
            msgs.extend(chunk)
        self.ends.append(len(msgs))


class NodeMemo:
    __slots__ = ("nodes", "ends", "cum_max", "ok", "spilled", "sp_ends", "valid_upto", "generation", "msgs",
                 "summary_at", "gstart", "noted", "single")

    def __init__(self) -> None:
        self.nodes: list[Call] = []
        self.ends: list[int] = []       # cumulative node count after each chain position
        self.cum_max: list[int] = []    # max seq of any node up to each position
        self.ok: list[bool] = []        # the prefix up to each position is in seq order
        self.spilled: list[str] = []
        self.sp_ends: list[int] = []
        self.valid_upto = 0
        self.generation = 0
        self.msgs: dict[str, MsgMemo] = {}
        self.summary_at: int | None = None  # the position holding the summary (ordered by its segment)
        self.gstart: list[int] = []          # first position of the merged group each position is in
        self.noted: Noted | None = None      # messages encoded by the last extension (stored.scan_run)
                                             # for the message pass after it
        self.single = bytearray()            # 1 for a position that holds its chain node alone (not code)

    @property
    def n(self) -> int:
        return len(self.ends)

    def trim(self, k: int) -> None:
        """Keep positions [0, k) — or fewer, not to split a merged group."""
        if k >= len(self.ends):
            return
        k = self.gstart[k]
        self.generation += 1
        del self.nodes[self.ends[k - 1] if k else 0:]
        del self.spilled[self.sp_ends[k - 1] if k else 0:]
        del self.ends[k:], self.cum_max[k:], self.ok[k:], self.sp_ends[k:], self.gstart[k:], self.single[k:]
        if self.summary_at is not None and self.summary_at >= k:
            self.summary_at = None
        for mm in self.msgs.values():
            mm.trim(k)

    def append_chunk(self, chunk: list[Call], lo: int | None, hi: int | None, summary: bool = False) -> None:
        """Add the next position's admitted nodes (seq-sorted; lo/hi = its order span).

        A chunk that reaches back before the end of the prefix (a call made from an earlier turn
        after later chain nodes, e.g. a function the turn's code ran after the model replied) is
        merged with the positions it overlaps: their nodes are re-sorted together and attributed to
        this position (the overlapped positions become empty), and message memos are cut there."""
        self.generation += 1
        prev_max = self.cum_max[-1] if self.cum_max else -1
        prev_ok = self.ok[-1] if self.ok else True
        g0 = len(self.ends)
        if lo is not None and lo <= prev_max and prev_ok:
            q = self.gstart[bisect_left(self.cum_max, lo)]  # never split an earlier group
            if summary or (self.summary_at is not None and self.summary_at >= q):
                prev_ok = False  # the summary is ordered by its segment, not its seq: plain path
            else:
                start = self.ends[q - 1] if q else 0
                base_max = self.cum_max[q - 1] if q else -1
                group = self.nodes[start:] + chunk
                group.sort(key=_seq)
                del self.nodes[start:]
                sp_start = self.sp_ends[q - 1] if q else 0
                del self.spilled[sp_start:]
                for i in range(q, len(self.ends)):
                    self.ends[i], self.cum_max[i], self.sp_ends[i], self.gstart[i] = start, base_max, sp_start, q
                self.single[q:] = bytes(len(self.ends) - q)
                g0 = q
                for mm in self.msgs.values():
                    mm.trim(q)
                chunk, lo = group, None
        if summary:
            self.summary_at = len(self.ends)
        self.nodes.extend(chunk)
        self.ends.append(len(self.nodes))
        self.ok.append(prev_ok and (lo is None or lo > prev_max))
        self.cum_max.append(prev_max if hi is None else max(prev_max, hi))
        self.spilled.extend(c.id for c in chunk if meta_has(c, "spilled"))
        self.sp_ends.append(len(self.spilled))
        self.gstart.append(g0)
        self.single.append(0)


def extend(memo: NodeMemo, length: int, chunk_at: Callable[[int], Chunk | Call],
           leaves: Callable[[int, int], list[Call]] | None = None, encode: bool = False) -> None:
    """Bring `memo` to cover chain positions [0, length). `chunk_at(p)` gives (chunk, lo, hi,
    volatile, is_summary), or just the node when the position admits that one node alone (the
    common case of a long chat: appended here without the general bookkeeping). `leaves(p, end)`,
    if given, gives the nodes of the positions from p on (before end) that admit just their chain
    node, up to the first that does not (maybe none): a run of them is appended at once, and with
    `encode` their OpenAI messages encoded as their lines are read (NodeMemo.noted)."""
    memo.trim(min(memo.valid_upto, length))
    memo.noted = Noted(len(memo.nodes)) if encode else None
    valid = length
    if length > memo.n:
        memo.generation += 1
    nodes, ends, cum_max, ok, spilled, sp_ends, gstart = (memo.nodes, memo.ends, memo.cum_max, memo.ok,
                                                          memo.spilled, memo.sp_ends, memo.gstart)
    with gc_paused(length - memo.n >= BULK):
        p = skip = memo.n
        while p < length:
            r: Chunk | Call | None = None
            if leaves is not None and p >= skip:
                run = leaves(p, length)
                skip = p + max(1, len(run))  # else one by one up to there (no rescans)
                if len(run) > 1:
                    seqs = [x.seq for x in run]
                    if (cum_max[-1] if p else -1) < seqs[0] and all(map(lt, seqs, islice(seqs, 1, None))):
                        _append_run(memo, p, run, seqs)
                        p += len(run)
                        continue
                elif run:
                    r = run[0]  # what chunk_at(p) gives a leaf
            if r is None:
                r = chunk_at(p)
            if type(r) is Call:
                seq = r.seq
                if (cum_max[-1] if p else -1) < seq:  # in seq order after the prefix: no merging
                    nodes.append(r)
                    ends.append(len(nodes))
                    ok.append(ok[-1] if p else True)
                    cum_max.append(seq)
                    if meta_has(r, "spilled"):
                        spilled.append(r.id)
                    sp_ends.append(len(spilled))
                    gstart.append(p)
                    memo.single.append(1)
                    p += 1
                    continue
                r = ([r], seq, seq, False, False)
            chunk, lo, hi, volatile, is_summary = r
            memo.append_chunk(chunk, lo, hi, is_summary)
            if volatile and valid == length:
                valid = p  # depends on the head (a retried tool call): recompute next time
            p += 1
    memo.valid_upto = valid


def _append_run(memo: NodeMemo, p: int, run: list[Call], seqs: list[int]) -> None:
    """Positions p… each admitting its one node, in seq order after the prefix: what the loop in
    `extend` appends one by one, in bulk."""
    k = len(run)
    n0 = len(memo.nodes)
    memo.nodes.extend(run)
    memo.ends.extend(range(n0 + 1, n0 + k + 1))
    memo.ok.extend(repeat(memo.ok[-1] if p else True, k))
    memo.cum_max.extend(seqs)
    memo.gstart.extend(range(p, p + k))
    memo.single.extend(b"\x01" * k)
    spilled, sp_ends = memo.spilled, memo.sp_ends
    if memo.noted is not None:
        memo.noted.at(n0)
    found = scan_run(run, memo.noted)
    if not found:
        sp_ends.extend(repeat(len(spilled), k))
        return
    found_ids = {id(x) for x in found}
    for x in run:
        if id(x) in found_ids:
            spilled.append(x.id)
        sp_ends.append(len(spilled))


def memo_messages(memo: NodeMemo, fmt: str, aged_before: int, max_chars: int,
                  emit: Callable[[list[Call]], list[Any]], head: list[Any],
                  positions: int, key: str | None = None,
                  one: Callable[[Call], Any] | None = None,   # a list, or one message (see below)
                  run: Callable[[list[Call], int], Sequence[object]] | None = None) -> list[Any]:
    """`head` + the messages of the memo's first `positions` positions (a new list; the message
    dicts are shared). `key` names the memo of this kind of messages (default: the format);
    `one(node)`, if given, renders a position that holds one node that is not a code node: a list
    of messages, or — for a format that never merges — one message that is not a list, or None to
    leave the node to `emit`. `run(nodes, i)`, for a format that never merges: for the nodes of
    consecutive positions that each hold their chain node alone (memo.nodes[i:i + len(nodes)]), in
    one call, one message each or None (that node goes to `emit`)."""
    aging = (aged_before, max_chars)
    key = fmt if key is None else key
    mm = memo.msgs.get(key)
    if mm is None:
        mm = memo.msgs[key] = MsgMemo(aging)
    elif mm.aging != aging:
        if mm.aging[1] != max_chars:
            mm.trim(0)
        else:
            mm.trim(bisect_left(memo.cum_max, min(mm.aging[0], aged_before), 0, mm.n))
        mm.aging = aging
    merge = fmt != "openai"
    ends, nodes = memo.ends, memo.nodes
    memo.noted = None  # this pass is their use (`run` holds them)
    msgs, mends = mm.msgs, mm.ends
    with gc_paused(memo.n - mm.n >= BULK):
        start = ends[mm.n - 1] if mm.n else 0
        single, p, n = memo.single, mm.n, memo.n
        while p < n:
            if run is not None and not merge and single[p]:
                q = single.find(0, p, n)
                q = n if q < 0 else q
                end = ends[q - 1]
                got = run(nodes[start:end], start)
                if None not in got:  # one message each
                    mends.extend(range(len(msgs) + 1, len(msgs) + len(got) + 1))
                    msgs.extend(got)
                else:
                    for c, out in zip(nodes[start:end], got):
                        if out is None:
                            msgs.extend(emit([c]))
                        else:
                            msgs.append(out)
                        mends.append(len(msgs))
                start, p = end, q
                continue
            end = ends[p]
            out = None
            if end - start == 1 and one is not None and nodes[start].role != "code":
                out = one(nodes[start])
            if out is None:
                out = emit(nodes[start:end]) if end > start else []
            start = end
            if merge:
                if len(out) > 1:
                    out = merge_same_role(out)
                mm.append_chunk(p, out, merge)
            else:  # nothing merges: append (`one` may give one message as such, e.g. its encoding)
                if type(out) is list:
                    msgs.extend(out)
                else:
                    msgs.append(out)
                mends.append(len(msgs))
            p += 1
    if positions >= mm.n:
        return head + mm.msgs
    return head + mm.prefix(positions)


def merge_same_role(msgs: list[Message]) -> list[Message]:
    """Anthropic: consecutive user (or assistant) messages become one, blocks concatenated."""
    merged: list[Message] = []
    for msg in msgs:
        if merged and msg["role"] == merged[-1]["role"] and msg["role"] in MERGE_ROLES:
            prev = merged[-1]
            merged[-1] = {"role": prev["role"], "content": list(prev["content"]) + list(msg["content"])}
        else:
            merged.append(msg)
    return merged
