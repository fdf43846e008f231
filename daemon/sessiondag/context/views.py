"""Two projections of the same nodes for display: the chat stream and the call tree."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from ..core.model import ROOT, Call, usage_of
from ..store.session import Session
from .aging import SUMMARY_KEY
from .cache import cache_for
from .content import parts_of, text_of
from .graphinfo import is_hidden_context, is_summary


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int


class ChatCall(TypedDict):
    """A code call folded into the chat row it hangs under."""
    id: str
    name: str
    status: str


class ChatRowBase(TypedDict):
    """A chat row but for its `calls` (cli/sessions.py's rows carry richer calls)."""
    id: str
    seq: int
    role: str
    name: str
    status: str
    created_at: float
    text: str
    usage: NotRequired[TokenUsage]  # llm rows
    covers_ids: NotRequired[list[str]]  # an active summary's row
    compacted: NotRequired[bool]  # a row that summary covers


class ChatRow(ChatRowBase):
    calls: NotRequired[list[ChatCall]]  # user and llm rows (not a summary's)


class TreeNode(TypedDict):
    id: str
    seq: int
    role: str
    name: str
    status: str
    children: list[TreeEntry]
    expose: NotRequired[object]  # the node's metadata value, passed through
    truncated: NotRequired[bool]  # cut at MAX_TREE_DEPTH


class TreeFold(TypedDict):
    """Consecutive loop iterations folded into one entry."""
    id: str
    seq: int
    role: str
    name: str
    status: str
    count: int
    ids: list[str]
    items: list[TreeNode]


TreeEntry = TreeNode | TreeFold


def _row(c: Call) -> ChatRow:
    row: ChatRow = {"id": c.id, "seq": c.seq, "role": c.role, "name": c.name, "status": c.status,
           "created_at": c.created_at, "text": text_of(parts_of(c.output))}
    if c.role == "llm":
        i, o = usage_of(c)
        row["usage"] = {"input_tokens": i, "output_tokens": o}
    return row


def chat_stream(session: Session, head_id: str | None = None) -> list[ChatRow]:
    """The branch's user and llm chain nodes by seq; nested calls folded into `calls` of the row
    they hang under; context/* hidden except an active summary (shown before the run it covers,
    with `covers_ids`; the covered rows carry `compacted: true`)."""
    cache = cache_for(session)
    g = cache.graph
    covered: set[str] = set()
    summary = None
    with session.lock, cache.lock:
        spine = list(cache.walk(g.head_id if head_id is None else head_id))
        sid = g.extra.get(SUMMARY_KEY)
        if sid is not None and sid in g.nodes:
            s = g.nodes[sid]
            covers = s.metadata.get("covers_ids") or []
            if covers and all(i in cache.spine_pos for i in covers):
                covered = set(covers)
                summary = s
    rows: list[ChatRow] = []
    last: ChatRow | None = None
    for c in spine:
        if summary is not None and c.id == summary.metadata["covers_ids"][0]:
            srow = _row(summary)
            srow["covers_ids"] = list(summary.metadata["covers_ids"])
            rows.append(srow)
        if is_hidden_context(c):
            continue
        if c.role in ("user", "llm") and not is_summary(c):
            last = _row(c)
            if c.id in covered:
                last["compacted"] = True
            last["calls"] = [{"id": kid.id, "name": kid.name, "status": kid.status}
                             for kid in (g.nodes[k] for k in g.children_by_caller(c.id))
                             if kid.role == "code" and not is_hidden_context(kid)]
            rows.append(last)
    return rows


# Levels of the call tree one view returns. Deeper subtrees are cut (the cut node carries
# `truncated: true`; view it with root_id = its id): the answer stays within what JSON encoders
# nest (orjson stops at 254 levels; a tree level costs up to 3).
MAX_TREE_DEPTH = 64


def call_tree(session: Session, root_id: str = ROOT) -> TreeNode:
    """The caller tree under `root_id`, children by seq. Consecutive siblings with the same role and
    name that are not chat turns (loop iterations) fold into one entry with `count` N, all N `ids`,
    and each iteration's own subtree in `items`. Built iteratively (a caller chain may be thousands
    deep); subtrees below MAX_TREE_DEPTH levels are cut and marked `truncated`."""
    g = session.graph
    top = g.get(root_id)
    root = _node(top)
    todo: list[tuple[TreeNode, Call, int]] = [(root, top, 0)]
    while todo:
        node, c, depth = todo.pop()
        kids = sorted((g.nodes[k] for k in g.children_by_caller(c.id)), key=lambda k: k.seq)
        if not kids:
            continue
        if depth >= MAX_TREE_DEPTH:
            node["truncated"] = True
            continue
        _fill_children(node["children"], kids, todo, depth + 1)
    return root


def _node(c: Call) -> TreeNode:
    node: TreeNode = {"id": c.id, "seq": c.seq, "role": c.role, "name": c.name, "status": c.status, "children": []}
    if c.metadata.get("expose") is not None:
        node["expose"] = c.metadata["expose"]
    return node


def _fill_children(out: list[TreeEntry], kids: list[Call], todo: list[tuple[TreeNode, Call, int]],
                   depth: int) -> None:
    run: list[Call] = []

    def sub(k: Call) -> TreeNode:
        d = _node(k)
        todo.append((d, k, depth))  # its own children are filled in later (no recursion)
        return d

    def flush() -> None:
        if not run:
            return
        if len(run) == 1:
            out.append(sub(run[0]))
        else:
            first, lastc = run[0], run[-1]
            out.append({"id": first.id, "seq": first.seq, "role": first.role, "name": first.name,
                        "status": lastc.status, "count": len(run), "ids": [k.id for k in run],
                        "items": [sub(k) for k in run]})
        run.clear()

    for k in kids:
        loopable = k.predecessor is None and not k.is_spawn_root
        if run and loopable and k.role == run[-1].role and k.name == run[-1].name:
            run.append(k)
        else:
            flush()
            if loopable:
                run.append(k)
            else:
                out.append(sub(k))
    flush()
