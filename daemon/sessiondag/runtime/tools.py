"""Tools: the `Tool` record the loop calls, and the built-in workspace tools, confined to the
session's working dir.

read_file, list_dir, search_text (read-only); write_file, edit_file (need "write" permission):
file_tools.py, over workspace/beneath.py (no symlink followed on the way, regular files only, no
writes through hard links). run_command (needs "run" permission; timeout + output cap).

Client file system: when the runtime carries a `client_fs` (ClientFs, set by the daemon for a client
that offers it, e.g. an ACP editor), read_file / write_file / edit_file read and write through that
client (its unsaved buffers, its editor) instead of the disk — after the same confinement checks,
with the resolved absolute path. Without one they use the disk.

A tool returns a str, a JSON-able value, or a ToolResult (text + metadata for its node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .command_tool import MAX_OUTPUT, run_command
from .file_tools import MAX_READ, edit_file, list_dir, read_file, resolve, search_text, write_file
from .tool_context import ClientFs, ToolContext
from .tool_result import ToolResult

__all__ = ["Tool", "ToolContext", "ClientFs", "ToolResult", "WORKSPACE_TOOLS", "MAX_READ", "MAX_OUTPUT", "read_file", "list_dir",
           "search_text", "write_file", "edit_file", "run_command", "resolve"]



@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]           # fn(ctx: ToolContext, **arguments) -> result (str or JSON-able)
    permission: str | None = None    # "write" | "run" | "mcp" | None
    node_name: str | None = None     # the code node's name when it is not `name` (MCP: mcp:<server>/<tool>)

    def spec(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
                      permission: str | None = None) -> "Tool":
        """A tool that calls `fn(**arguments)` (e.g. an @agentic_function: its node then hangs under
        the tool node). Parameters come from the signature's annotations; the description from the
        first paragraph of the docstring unless given."""
        import inspect
        sig = inspect.signature(fn)
        types: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
        props, required = {}, []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            t = types.get(p.annotation if not isinstance(p.annotation, str) else
                          {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}
                          .get(p.annotation))
            props[p.name] = {"type": t} if t else {}
            if p.default is p.empty:
                required.append(p.name)
        doc = inspect.getdoc(fn) or ""
        desc = description or doc.split("\n\n")[0].strip() or (name or fn.__name__)
        tool_name: str = name if name else getattr(fn, "function_name", fn.__name__)  # an @agentic_function's name
        return cls(tool_name, desc, _obj(props, required),
                   lambda ctx, **kw: fn(**kw), permission)


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


WORKSPACE_TOOLS = [
    Tool("read_file", "Read a text file (path relative to the working dir).",
         _obj({"path": {"type": "string"}}, ["path"]), read_file),
    Tool("list_dir", "List a directory (relative path, default '.'); directories end with '/', symlinks with '@'.",
         _obj({"path": {"type": "string"}}, []), list_dir),
    Tool("search_text", "Search files for a literal string (or a regex with regex=true); returns path:line: text.",
         _obj({"pattern": {"type": "string"}, "path": {"type": "string"}, "regex": {"type": "boolean"}},
              ["pattern"]), search_text),
    Tool("write_file", "Create or overwrite a file with the given content.",
         _obj({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
         write_file, "write"),
    Tool("edit_file", "Replace the one exact occurrence of `old` with `new` in a file.",
         _obj({"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
              ["path", "old", "new"]), edit_file, "write"),
    Tool("run_command", "Run a shell command in the working dir (timeout in seconds, output capped).",
         _obj({"command": {"type": "string"}, "timeout": {"type": "number"}}, ["command"]),
         run_command, "run"),
]
