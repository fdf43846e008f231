"""What a tool may return besides a str or JSON-able value: its text for the model plus metadata for
the tool node (e.g. list_dir's raw names). A str subclass, so a caller of a tool function that
expects a str still gets one."""

from __future__ import annotations

from typing import Any


class ToolResult(str):
    metadata: dict[str, Any]

    def __new__(cls, text: str, metadata: dict[str, Any] | None = None) -> "ToolResult":
        self = super().__new__(cls, text)
        self.metadata = dict(metadata or {})
        return self

    @property
    def text(self) -> str:
        return str.__str__(self)
