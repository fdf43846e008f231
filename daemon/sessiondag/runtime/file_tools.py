"""The file tools: read_file, list_dir, search_text (read-only); write_file, edit_file ("write").

Every path goes through workspace/beneath.py: opened beneath the working dir without following any
symlink on the way (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, else an O_NOFOLLOW walk), so a
tree swapped under a running tool cannot lead it out. A symlink whose target stays inside is
followed by re-resolving its target (`Beneath.through_links`), one that leads out is refused
(PathRefusedError reason `symlink`). Only regular files are read or written (a FIFO or device is
refused at once, `not_regular`); a hard-linked file is never written (`hard_link`) and read only with
the setting agent.read_hard_links. Names that are not UTF-8 are shown with `\\xNN` escapes (a
backslash as `\\\\`); list_dir and search_text put the raw bytes (base64) in the node's metadata
(`raw_names`), and the file tools accept an escaped name back.

A write asks permission with `{tool, path, old_text}`: the file's text before the write (null:
a new file; left out over 1 MiB or not UTF-8), read here through the same checks, so a client
shows the diff without reading the file itself.

Client file system: when the runtime carries a `client_fs` (an ACP editor's buffers, set by the
daemon), read_file / write_file / edit_file go through that client with the absolute path, after
the same checks (no symlink leading out, not a special file, not hard-linked).
"""

from __future__ import annotations

import base64
import os
import re
import stat
from typing import Iterable

from ..workspace.beneath import Beneath, PathRefusedError, shown, unshown
from .tool_context import ClientFs, ToolContext
from .tool_result import ToolResult


MAX_READ = 256 * 1024
OLD_TEXT_MAX = 1 << 20   # a write's permission detail carries the old text up to this size
MAX_MATCHES = 200
MAX_SEARCH_FILES = 20_000
SKIP_DIRS = frozenset({b".git", b"__pycache__", b"node_modules", b".venv", b".mypy_cache", b".pytest_cache"})
_MARK = {"dir": "/", "symlink": "@", "fifo": "|", "socket": "=", "device": "#", "other": "?"}


def beneath(ctx: ToolContext) -> Beneath:
    """The working dir of a tool call, opened (close it: `with beneath(ctx) as b`)."""
    return Beneath(ctx.working_dir, resolver=getattr(ctx.runtime, "beneath", "auto"),
                   allow_hard_link_reads=bool(getattr(ctx.runtime, "read_hard_links", False)))


def _client_fs(ctx: ToolContext) -> ClientFs | None:
    """The client file system (tool_context.py ClientFs) if the runtime carries one."""
    fs: ClientFs | None = getattr(ctx.runtime, "client_fs", None)
    return fs


def _target(b: Beneath, path: object, *, existing: bool) -> bytes:
    """The symlink-free path of `path` (inside links followed); for an existing target, a name as
    list_dir shows it (`bad\\xff.txt`) is accepted too."""
    if not isinstance(path, str) or not path:
        raise PathRefusedError(repr(path), "not a path", "not_a_path")
    if path.startswith("~"):
        raise PathRefusedError(path, "absolute paths are refused; use a path relative to the working dir",
                               "absolute")
    rel = b.through_links(path)
    if existing and "\\" in path and not b.exists(rel):
        alt = b.through_links(unshown(path))
        if b.exists(alt):
            return alt
    return rel


def resolve(working_dir: str, path: str, *, must_exist: bool = False, resolver: str = "auto") -> str:
    """The absolute path (inside links resolved) of `path` in `working_dir`, or PathRefusedError;
    for callers that hand a path to someone else (the client file system)."""
    with Beneath(working_dir, resolver=resolver) as b:
        rel = _target(b, path, existing=must_exist)
        if must_exist and not b.exists(rel):
            raise FileNotFoundError(f"{path}: no such file or directory")
    return os.path.join(os.path.realpath(working_dir), os.fsdecode(rel)) if rel != b"." else \
        os.path.realpath(working_dir)


def _checked_path(ctx: ToolContext, b: Beneath, rel: bytes, *, writing: bool) -> str:
    """The absolute path of rel, after the checks a disk access makes on what exists there now
    (for the client file system, and before a write asks for permission)."""
    try:
        st = b.lstat(rel)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise PathRefusedError(shown(rel), "not a regular file", "not_regular")
    if st is not None and st.st_nlink > 1 and (writing or not b.allow_hard_link_reads):
        raise PathRefusedError(shown(rel), f"it has {st.st_nlink} hard links", "hard_link")
    return os.path.join(os.path.realpath(ctx.working_dir), os.fsdecode(rel))


def _read_all(ctx: ToolContext, path: str, limit: int | None) -> bytes:
    with beneath(ctx) as b:
        rel = _target(b, path, existing=True)
        reader = fs.read if (fs := _client_fs(ctx)) else None
        if reader is not None:
            return reader(_checked_path(ctx, b, rel, writing=False)).encode()
        return b.read_bytes(rel, limit=limit)


def read_file(ctx: ToolContext, path: str) -> str:
    data = _read_all(ctx, path, MAX_READ)
    text = data[:MAX_READ].decode("utf-8", errors="replace")
    return text + ("\n[… truncated]" if len(data) > MAX_READ else "")


def _raw_names(names: list[bytes]) -> dict[str, dict[str, str]]:
    """Metadata with the raw bytes of the names whose shown form is not the name itself."""
    raw = {shown(n): base64.b64encode(n).decode() for n in names if shown(n) != n.decode("utf-8", "replace")}
    return {"raw_names": raw} if raw else {}


def list_dir(ctx: ToolContext, path: str = ".") -> ToolResult:
    with beneath(ctx) as b:
        entries = b.listdir(_target(b, path, existing=True))
    lines = [e.shown + _MARK.get(e.kind, "") for e in entries]
    return ToolResult("\n".join(lines), _raw_names([e.name for e in entries]))


def search_text(ctx: ToolContext, pattern: str, path: str = ".", regex: bool = False) -> ToolResult:
    rx = re.compile(pattern if regex else re.escape(pattern))
    hits: list[str] = []
    names: list[bytes] = []
    with beneath(ctx) as b:
        rel = _target(b, path, existing=True)
        if stat.S_ISREG(b.lstat(rel).st_mode):
            files: Iterable[bytes] = [rel]
        else:
            files = (p for p, e in b.walk(rel, skip=SKIP_DIRS, max_entries=MAX_SEARCH_FILES) if e.kind == "file")
        for fp in files:
            try:
                data = b.read_bytes(fp, limit=MAX_READ)[:MAX_READ]
            except (PathRefusedError, OSError):
                continue        # refused (hard link, swapped for a FIFO), vanished, unreadable
            if b"\x00" in data[:1024]:
                continue
            for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{shown(fp)}:{n}: {line[:300]}")
                    names.append(fp)
                    if len(hits) >= MAX_MATCHES:
                        return ToolResult("\n".join(hits) + "\n[… more matches]", _raw_names(names))
    return ToolResult("\n".join(hits) if hits else "no matches", _raw_names(names))


def _write(ctx: ToolContext, b: Beneath, rel: bytes, text: str) -> None:
    writer = fs.write if (fs := _client_fs(ctx)) else None
    if writer is not None:
        writer(_checked_path(ctx, b, rel, writing=True), text)
    else:
        b.write_bytes(rel, text.encode())


class _Unreadable:
    """The type of UNREADABLE."""


UNREADABLE = _Unreadable()   # what a write replaces could not be read: no old text in its question


def _with_old_text(detail: dict[str, object], old: bytes | _Unreadable | None) -> dict[str, object]:
    """A write's permission detail with the file's text before it (`old_text`; null: no such file),
    so the one asked sees what changes; left out for a file over OLD_TEXT_MAX, binary, not UTF-8 or unreadable."""
    if old is None:
        return {**detail, "old_text": None}
    if isinstance(old, _Unreadable) or len(old) > OLD_TEXT_MAX or b"\0" in old[:8000]:   # binary as git sees it
        return detail
    try:
        return {**detail, "old_text": old.decode("utf-8")}
    except UnicodeDecodeError:
        return detail


def _old_bytes(ctx: ToolContext, b: Beneath, rel: bytes) -> bytes | _Unreadable | None:
    """What a write_file replaces, read as the tools read (None: nothing there yet)."""
    if not b.exists(rel):
        return None
    reader = fs.read if (fs := _client_fs(ctx)) else None
    try:
        if reader is not None:
            return reader(_checked_path(ctx, b, rel, writing=False)).encode()
        return b.read_bytes(rel, limit=OLD_TEXT_MAX + 1)
    except (OSError, PathRefusedError):
        return UNREADABLE


def write_file(ctx: ToolContext, path: str, content: str) -> str:
    with beneath(ctx) as b:
        rel = _target(b, path, existing=False)
        _checked_path(ctx, b, rel, writing=True)     # no permission asked for a write refused anyway
        ctx.runtime.require_permission("write", _with_old_text({"tool": "write_file", "path": path},
                                                                _old_bytes(ctx, b, rel)))
        _write(ctx, b, rel, content)
    return f"wrote {len(content.encode())} bytes to {path}"


def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    raw = _read_all(ctx, path, None)
    text = raw.decode()
    n = text.count(old) if old else 0
    if n != 1:
        raise ValueError(f"edit_file needs `old` to occur exactly once in {path}; it occurs {n} times")
    ctx.runtime.require_permission("write", _with_old_text({"tool": "edit_file", "path": path}, raw))
    with beneath(ctx) as b:
        _write(ctx, b, _target(b, path, existing=True), text.replace(old, new, 1))
    return f"edited {path}"
