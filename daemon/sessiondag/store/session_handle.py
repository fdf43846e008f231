"""What SessionStore's open, start and resume return (rpc_schema/schemas/session_handle.json)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import wire_types

# `SessionHandle.to_dict()`'s wire form and its usage, generated from rpc_schema/schemas/session_handle.json
# (core/wire_types.py; usage_delta's type is usage_total's, key for key)
HandleDict = wire_types.SessionHandle
UsageDict = wire_types.SessionHandleUsageTotal


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> UsageDict:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True, slots=True)
class SessionHandle:
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

    def to_dict(self) -> HandleDict:
        return {"session_id": self.id, "path": self.path, "working_dir": self.working_dir,
                "schema_version": self.schema_version, "head_id": self.head_id,
                "usage_delta": self.usage_delta.to_dict(), "usage_total": self.usage_total.to_dict()}
