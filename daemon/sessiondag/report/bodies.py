"""What the viewer shows of one row: its text, model, usage, error, tool calls (input, output, the
permission they needed, ask_user questions and answers, the files they wrote, a sub-agent they
spawned, nested calls) and, for a turn's user node, the files the turn changed.

Every string passes the redactor and is clipped to `max_field_bytes`; a spilled body is loaded when
it fits that limit, else its preview is shown with what was left out. Data from disk is hostile:
unexpected shapes are shown as JSON, never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import orjson

from ..context.content import parts_of, text_of
from ..core.errors import SessionDagError
from ..core.model import Call
from ..core.usage import LATENCY_KEY, node_usage
from ..store.session import Session
from ..store.spill import is_blob_ref
from .diffs import blob_diff
from .layout import Layout
from .page_types import CallBody, Clipped, FileChange, Nested, RowBody, Shown
from .redact import Redactor

PERMISSION_KIND = {"write_file": "write", "edit_file": "write", "run_command": "run"}
NESTED_DEPTH = 4        # levels of nested calls shown under a tool call
NESTED_ITEMS = 50       # calls shown per level


@dataclass
class Limits:
    max_field_bytes: int = 64 * 1024
    max_diff_bytes: int = 256 * 1024
    redactor: Redactor = field(default_factory=Redactor)


def clip(s: str, limit: int) -> tuple[str, int]:
    """`s` cut to about `limit` bytes of UTF-8 (on a character boundary) and how many bytes were cut."""
    b = s.encode("utf-8", "replace")
    if len(b) <= limit:
        return s, 0
    return b[:limit].decode("utf-8", "ignore"), len(b) - limit


def _latency(md: Mapping[str, object]) -> float | None:
    """A code node's recorded wall time (runtime/loop.py run_tool), when it has a sane one."""
    ms = md.get(LATENCY_KEY)
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 <= ms < 1e12:
        return round(float(ms), 1)
    return None


class Bodies:
    def __init__(self, session: Session, lay: Layout, limits: Limits):
        self.s, self.g, self.lay, self.lim = session, session.graph, lay, limits
        self.red = limits.redactor

    # --- strings -------------------------------------------------------------------------------
    def _str(self, s: str) -> Clipped | str:
        text, cut = clip(self.red.text(s), self.lim.max_field_bytes)
        return text if not cut else {"text": text, "cut": cut}

    def _field(self, v: object) -> Shown:
        """A node field for display: text as is, structures as indented JSON, spill references
        followed when the body fits the limit (else the preview and its size)."""
        if v is None:
            return None
        if isinstance(v, dict) and is_blob_ref(v):   # (is_blob_ref: a dict, said again for mypy)
            ref = v
            given = ref.get("size")
            size = given if isinstance(given, int) else 0
            if size <= self.lim.max_field_bytes:
                try:
                    v = self.s.full_value(ref)
                except (SessionDagError, OSError, KeyError, ValueError):
                    return {"text": self.red.text(str(ref.get("preview") or "")), "spilled": size, "missing": True}
            else:
                return {"text": self.red.text(str(ref.get("preview") or "")), "spilled": size,
                        "cut": max(0, size - len(str(ref.get("preview") or "")))}
        if isinstance(v, str):
            return self._str(v)
        if isinstance(v, list) and v and all(isinstance(p, dict) and "type" in p for p in v):
            try:
                return self._str(text_of(parts_of(v)))
            except (KeyError, TypeError, ValueError):
                pass
        try:
            text = orjson.dumps(v, option=orjson.OPT_INDENT_2).decode()
        except TypeError:
            text = repr(v)
        return self._str(text)

    def _text(self, c: Call) -> Shown:
        out = c.output
        if is_blob_ref(out):
            return self._field(out)
        try:
            return self._str(text_of(parts_of(out)))
        except (KeyError, TypeError, ValueError):
            return self._field(out)

    @staticmethod
    def _error(c: Call) -> str | None:
        err = c.metadata.get("error")
        if isinstance(err, dict):
            return f"{err.get('type')}: {err.get('message')}"
        return None if err is None else str(err)

    # --- rows ----------------------------------------------------------------------------------
    def row(self, r: int) -> RowBody:
        c = self.lay.rows[r]
        md = c.metadata
        b: RowBody = {"id": c.id, "seq": c.seq, "at": c.created_at, "text": self._text(c)}
        if c.role == "code":
            b["input"] = self._field(c.input)
            ms = _latency(md)
            if ms is not None:
                b["latency_ms"] = ms
        err = self._error(c)
        if err:
            b["error"] = self.red.text(err)
        if isinstance(md.get("source"), str):
            b["source"] = md["source"]
        if c.role == "llm":
            u = node_usage(c)
            b["model"] = self.red.text(u.model_key)
            b["usage"] = [u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens]
            b["latency_ms"] = round(u.latency_ms, 1)
            b["cost_usd"] = None if u.cost_pusd is None else u.cost_pusd / 1e12
            if isinstance(md.get("finish_reason"), str):
                b["finish"] = md["finish_reason"]
        covers = md.get("covers_ids") if c.name == "context/summary" else None
        if isinstance(covers, list):
            rows = [self.lay.row_of[i] for i in covers if isinstance(i, str) and i in self.lay.row_of]
            b["covers"] = [min(rows), max(rows), len(covers)] if rows else [-1, -1, len(covers)]
        calls = [self._call(self.g.nodes[k], 0) for k in self.g.children_by_caller(c.id)
                 if self._shown_call(self.g.nodes[k])]
        if calls:
            b["calls"] = calls
        return b

    def _shown_call(self, k: Call) -> bool:
        return k.role == "code" and not k.name.startswith("context/") and k.id not in self.lay.row_of

    def _call(self, k: Call, depth: int) -> CallBody:
        d: CallBody = {"id": k.id, "seq": k.seq, "name": self.red.text(k.name), "status": k.status,
                             "input": self._field(k.input), "output": self._field(k.output)}
        err = self._error(k)
        if err:
            d["error"] = self.red.text(err)
        md = k.metadata
        ms = _latency(md)
        if ms is not None:
            d["latency_ms"] = ms
        kind = PERMISSION_KIND.get(k.name) or ("mcp" if k.name.startswith("mcp:") else None)
        if isinstance(md.get("error"), dict) and md["error"].get("type") == "PermissionDeniedError":
            d["perm"] = {"kind": kind or "?", "granted": False}
        elif kind and k.status == "completed":
            d["perm"] = {"kind": kind, "granted": True}
        if k.name == "ask_user" and isinstance(k.input, dict):
            opts = k.input.get("options")
            d["ask"] = {"q": self.red.text(str(k.input.get("question", ""))),
                        "options": [self.red.text(str(o)) for o in opts] if isinstance(opts, list) else [],
                        "a": self._field(k.output)}
        files = md.get("workspace_files")
        if isinstance(files, list):
            d["files"] = [self._file_record(f) for f in files[:50] if isinstance(f, dict)]
        kids = [self.g.nodes[x] for x in self.g.children_by_caller(k.id)]
        for kid in kids:
            if kid.is_spawn_root and kid.id in self.lay.row_of:
                d["spawn"] = self.lay.row_of[kid.id]
        if depth < NESTED_DEPTH:
            nested: list[CallBody | Nested] = []
            for kid in kids:
                if kid.id in self.lay.row_of or kid.name.startswith("context/") or \
                        (kid.role == "user" and kid.metadata.get("source") == "ask_user"):
                    continue
                if len(nested) >= NESTED_ITEMS:
                    d["more"] = len(kids) - NESTED_ITEMS
                    break
                if kid.role == "code":
                    nested.append(self._call(kid, depth + 1))
                else:
                    nested.append({"id": kid.id, "seq": kid.seq, "name": self.red.text(kid.name), "role": kid.role,
                                   "status": kid.status, "output": self._text(kid)})
            if nested:
                d["kids"] = nested
        return d

    def _file_record(self, f: dict[str, object]) -> FileChange:
        """A file a tool call wrote, as a diff of its before/after blobs (docs/checkpoints.md)."""
        return blob_diff(self.s, f, self.lim.max_diff_bytes, self.lim.max_field_bytes, self.red)
