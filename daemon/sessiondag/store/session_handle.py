"""What SessionStore's open, start and resume return (rpc_schema/schemas/session_handle.json)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict


class UsageDict(TypedDict):
    input_tokens: int
    output_tokens: int


class HandleDict(TypedDict):
    """`SessionHandle.to_dict()`: the wire form (the same keys as the client's wire/protocol.py SessionHandle)."""
    session_id: str
    path: str
    working_dir: str | None
    schema_version: int
    head_id: str
    usage_delta: UsageDict
    usage_total: UsageDict


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
