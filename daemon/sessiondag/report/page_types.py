"""The types of the report's data document (document.py: its shape; docs/report.md: what the viewer
does with it): what bodies.py, diffs.py, document.py, tips.py and live.py build and html.py and
bridge.py hand to the page. Every value is JSON the viewer reads; a node's own values reach it only
as display text (bodies.py `Shown`), never as they are.
"""

from __future__ import annotations

from typing import NotRequired, Required, TypedDict

from ..context.ledger import UsageRow, UsageTotals


class Clipped(TypedDict, total=False):
    """A field's text when it is not shown whole: cut (`cut` bytes left out) or a spilled body
    (`spilled`: its size; `missing`: its blob is not in the session)."""
    text: Required[str]
    cut: int
    spilled: int
    missing: bool


Shown = str | Clipped | None
"""A node field for display (bodies.py `_field`): its text, or its text with what was left out."""


class FileChange(TypedDict):
    """A file a turn or a tool call changed: its diff (masked, clipped) or a note saying why none."""
    path: str
    change: str
    diff: NotRequired[str]
    note: NotRequired[str]


class Perm(TypedDict):
    kind: str
    granted: bool


class Ask(TypedDict):
    q: str
    options: list[str]
    a: Shown


class Nested(TypedDict):
    """A call under a tool call that is not a code node (an inner model call, a user node)."""
    id: str
    seq: int
    name: str
    role: str
    status: str
    output: Shown


class CallBody(TypedDict):
    """A tool call shown in a row's body, with its nested calls (`kids`, NESTED_DEPTH levels)."""
    id: str
    seq: int
    name: str
    status: str
    input: Shown
    output: Shown
    error: NotRequired[str]
    latency_ms: NotRequired[float]
    perm: NotRequired[Perm]
    ask: NotRequired[Ask]
    files: NotRequired[list[FileChange]]
    spawn: NotRequired[int]
    more: NotRequired[int]
    kids: NotRequired[list[CallBody | Nested]]


class RowBody(TypedDict):
    """What the viewer shows of one row (bodies.py `row`; a turn's files: document.py `Rows.row`)."""
    id: str
    seq: int
    at: float
    text: Shown
    input: NotRequired[Shown]
    latency_ms: NotRequired[float]
    error: NotRequired[str]
    source: NotRequired[str]
    model: NotRequired[str]
    usage: NotRequired[list[int]]
    cost_usd: NotRequired[float | None]
    finish: NotRequired[str]
    covers: NotRequired[list[int]]
    calls: NotRequired[list[CallBody]]
    files: NotRequired[list[FileChange]]
    files_from: NotRequired[str]


RowCols = tuple[str, int, str, str, str, int, int, int, str]
"""One row's columns, in document.py COLS order: id, seq, role, status, name, parent, seg, flags, snip."""

Cell = str | int
"""A value of a column (`rows`: a list per name in COLS, a row's own at its index)."""

PatchRow = tuple[int, str, int, str, str, str, int, int, int, str]
"""A changed row in a patch: its row number, then its columns (RowCols)."""


class Meta(TypedDict):
    session_id: str
    title: str
    working_dir: str
    head_id: str
    nodes: int
    rows: int
    exported_at: float
    version: str
    live: bool
    redact_patterns: int
    last_seq: int


class BranchEntry(TypedDict):
    """A branch tip (document.py `branches`, tips.py): `usage` its whole branch's, when computed."""
    row: int
    head_id: str
    name: str | None
    main: bool
    current: bool
    spawn: bool
    status: str
    usage: NotRequired[UsageTotals]


class SubagentUsage(UsageRow, total=False):
    """A sub-agent's row of the ledger with the row its branch starts at."""
    row: int


class UsageRollup(TypedDict):
    total: UsageTotals
    segments: dict[str, UsageRow]
    subagents: list[SubagentUsage]


class Document(TypedDict):
    """The document (document.py `build`): `chunks`, the row bodies in chunks of CHUNK, are kept
    apart by the live document (live.py: its `head` has none) and by the file's `sd-doc` element
    (html.py: it has `chunk_count` instead); `version` is the live document's patch number."""
    v: int
    meta: Meta
    lanes: int
    rows: dict[str, list[Cell]]
    segs: list[list[int]]
    summaries: list[list[int]]
    branches: list[BranchEntry]
    usage: UsageRollup
    chunk_size: int
    chunks: NotRequired[list[list[RowBody]]]
    chunk_count: NotRequired[int]
    version: NotRequired[int]


class Patch(TypedDict, total=False):
    """A live patch (live.py): the rows and bodies that changed, with what else changed beside them;
    or the streamed `text` of running rows ([row, UTF-16 offset, text from there]); or the branches
    and the usage roll-ups. `v`: its version (patch_log.py)."""
    v: int
    n: int
    rows: list[PatchRow]
    bodies: list[tuple[int, RowBody]]
    segs: list[list[int]]
    lanes: int
    meta: Meta
    summaries: list[list[int]]
    text: list[list[int | str]]
    branches: list[BranchEntry]
    usage: UsageRollup
