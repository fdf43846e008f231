"""The result types of the client. With the daemon package installed they are its own classes
(`Call`, `Branch`, `SessionHandle`, `Usage`, the typed errors); installed alone (`pip install
./clients/python`), the client uses the small equivalents below, built from the same wire fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:  # the daemon package is here: share its classes (isinstance works across both)
    from sessiondag.core.errors import ERROR_CLASSES, SessionDagError
    from sessiondag.core.graph import Branch
    from sessiondag.core.model import Call
    from sessiondag.core.paging import BranchPage
    from sessiondag.store.handles import SessionHandle, Usage
except ImportError:  # the client alone
    class SessionDagError(Exception):  # type: ignore[no-redef]
        """A typed error of the daemon (`code` is its data.kind)."""

        code = "sessiondag_error"

    ERROR_CLASSES = {}  # type: ignore[assignment]
    for _code in ("invalid_node", "predecessor_missing", "broken_predecessor_chain", "not_found",
                  "head_mismatch", "invalid_session_id", "session_exists", "session_resume",
                  "working_dir_unbound", "session_deleted", "session_busy", "storage_error", "storage_full",
                  "config_error", "invalid_cursor"):
        _name = "".join(p.capitalize() for p in _code.split("_")) + "Error"
        ERROR_CLASSES[_code] = type(_name, (SessionDagError,), {"code": _code})

    @dataclass
    class Call:  # type: ignore[no-redef]
        role: str
        name: str
        input: Any = None
        output: Any = None
        status: str = "completed"
        caller: str = "ROOT"
        predecessor: str | None = None
        reads: list[str] = field(default_factory=list)
        metadata: dict[str, Any] = field(default_factory=dict)
        id: str = ""
        seq: int = -1
        created_at: float = 0.0

        @classmethod
        def from_dict(cls, d: dict[str, Any]) -> "Call":
            known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and v is not None}
            return cls(**known)

        def to_dict(self) -> dict[str, Any]:
            return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @dataclass(frozen=True)
    class Branch:  # type: ignore[no-redef]
        head_id: str
        name: str | None
        main: bool
        current: bool
        spawn_root: str | None
        status: str
        seq: int

    @dataclass(frozen=True)
    class Usage:  # type: ignore[no-redef]
        input_tokens: int = 0
        output_tokens: int = 0

    @dataclass(frozen=True)
    class SessionHandle:  # type: ignore[no-redef]
        id: str
        path: str
        working_dir: str | None
        schema_version: int
        head_id: str
        usage_delta: Usage
        usage_total: Usage

        @property
        def session_id(self) -> str:
            return self.id

    @dataclass(frozen=True)
    class BranchPage:  # type: ignore[no-redef]
        nodes: list[Any]
        head_id: str
        next_cursor: str | None
        total: int

__all__ = ["Branch", "BranchPage", "Call", "ERROR_CLASSES", "SessionDagError", "SessionHandle", "Usage"]
