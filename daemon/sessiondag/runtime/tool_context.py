"""What a tool's function is handed (`fn(ctx, **arguments)`): the working dir, the runtime that runs
it (as cancellable.py's `ToolHost`: its cancellation and permission check; the file and command
tools read their optional settings — `beneath`, `client_fs`, `sandbox` … — with `getattr` and a
default), and the session's writer. Below tools.py, so that the tool modules it lists
(file_tools.py, command_tool.py) can name it; tools.py re-exports both names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .cancellable import ToolHost

if TYPE_CHECKING:
    from .writer import SessionWriter


@dataclass
class ClientFs:
    """File I/O delegated to the client that started the turn. read(abs_path) -> text;
    write(abs_path, text). Either may be None (that direction uses the disk)."""
    read: Callable[[str], str] | None = None
    write: Callable[[str, str], None] | None = None


@dataclass
class ToolContext:
    working_dir: str
    runtime: ToolHost
    writer: SessionWriter | None = None
