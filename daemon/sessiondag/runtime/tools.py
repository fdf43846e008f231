"""Built-in workspace tools, confined to the session's working dir.

read_file, list_dir, search_text (read-only); write_file, edit_file (need "write" permission);
run_command (needs "run" permission; timeout + output cap). Every path is resolved inside the
working dir: absolute paths, `..` components and symlinks that resolve outside it are refused
(PathRefusedError); writes open the final component with O_NOFOLLOW.

Client file system: when the runtime carries a `client_fs` (ClientFs, set by the daemon for a client
that offers it, e.g. an ACP editor), read_file / write_file / edit_file read and write through that
client (its unsaved buffers, its editor) instead of the disk — after the same confinement checks,
with the resolved absolute path. Without one they use the disk.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from typing import Any, Callable

from .errors import PathRefusedError

MAX_READ = 256 * 1024
MAX_OUTPUT = 64 * 1024
MAX_MATCHES = 200
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache"}


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]           # fn(ctx: ToolContext, **arguments) -> result (str or JSON-able)
    permission: str | None = None    # "write" | "run" | None

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
        types = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
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
        return cls(name or getattr(fn, "function_name", fn.__name__), desc, _obj(props, required),
                   lambda ctx, **kw: fn(**kw), permission)


@dataclass
class ClientFs:
    """File I/O delegated to the client that started the turn. read(abs_path) -> text;
    write(abs_path, text). Either may be None (that direction uses the disk)."""
    read: Callable[[str], str] | None = None
    write: Callable[[str, str], None] | None = None


def _client_fs(ctx: "ToolContext", op: str) -> Callable[..., Any] | None:
    fs = getattr(ctx.runtime, "client_fs", None)
    return getattr(fs, op, None) if fs is not None else None


@dataclass
class ToolContext:
    working_dir: str
    runtime: Any
    writer: Any = None


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def resolve(working_dir: str, path: str, *, must_exist: bool = False) -> str:
    """The real path of `path` inside `working_dir`, or PathRefusedError."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise PathRefusedError(str(path), "not a path")
    if os.path.isabs(path) or path.startswith("~"):
        raise PathRefusedError(path, "absolute paths are refused; use a path relative to the working dir")
    parts = re.split(r"[\\/]+", path)
    if ".." in parts:
        raise PathRefusedError(path, "'..' is refused")
    root = os.path.realpath(working_dir)
    real = os.path.realpath(os.path.join(root, path))
    if real != root and not real.startswith(root + os.sep):
        raise PathRefusedError(path, "it resolves outside the working dir (symlink)")
    if must_exist and not os.path.exists(real):
        raise FileNotFoundError(f"{path}: no such file or directory")
    return real


def _rel(ctx: ToolContext, real: str) -> str:
    return os.path.relpath(real, os.path.realpath(ctx.working_dir))


def _read_text(ctx: ToolContext, path: str) -> str:
    reader = _client_fs(ctx, "read")
    if reader is not None:
        return reader(resolve(ctx.working_dir, path))
    with open(resolve(ctx.working_dir, path, must_exist=True), "rb") as f:
        return f.read().decode()


def read_file(ctx: ToolContext, path: str) -> str:
    reader = _client_fs(ctx, "read")
    if reader is not None:
        data = reader(resolve(ctx.working_dir, path)).encode()
    else:
        real = resolve(ctx.working_dir, path, must_exist=True)
        with open(real, "rb") as f:
            data = f.read(MAX_READ + 1)
    text = data[:MAX_READ].decode("utf-8", errors="replace")
    return text + ("\n[… truncated]" if len(data) > MAX_READ else "")


def list_dir(ctx: ToolContext, path: str = ".") -> str:
    real = resolve(ctx.working_dir, path, must_exist=True)
    out = []
    for name in sorted(os.listdir(real)):
        full = os.path.join(real, name)
        out.append(name + ("/" if os.path.isdir(full) else ""))
    return "\n".join(out)


def search_text(ctx: ToolContext, pattern: str, path: str = ".", regex: bool = False) -> str:
    real = resolve(ctx.working_dir, path, must_exist=True)
    rx = re.compile(pattern if regex else re.escape(pattern))
    hits: list[str] = []
    files = [real] if os.path.isfile(real) else None
    if files is None:
        files = []
        for dirpath, dirnames, filenames in os.walk(real):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            files.extend(os.path.join(dirpath, n) for n in sorted(filenames))
    root = os.path.realpath(ctx.working_dir)
    for fp in files:
        if os.path.islink(fp) and not os.path.realpath(fp).startswith(root + os.sep):
            continue
        try:
            with open(fp, "rb") as f:
                data = f.read(MAX_READ)
        except OSError:
            continue
        if b"\x00" in data[:1024]:
            continue
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if rx.search(line):
                hits.append(f"{_rel(ctx, fp)}:{n}: {line[:300]}")
                if len(hits) >= MAX_MATCHES:
                    return "\n".join(hits) + "\n[… more matches]"
    return "\n".join(hits) if hits else "no matches"


def _write(real: str, data: bytes) -> None:
    fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_file(ctx: ToolContext, path: str, content: str) -> str:
    real = resolve(ctx.working_dir, path)
    ctx.runtime.require_permission("write", {"tool": "write_file", "path": path})
    writer = _client_fs(ctx, "write")
    if writer is not None:
        writer(resolve(ctx.working_dir, path), content)
        return f"wrote {len(content.encode())} bytes to {path}"
    os.makedirs(os.path.dirname(real), exist_ok=True)
    resolve(ctx.working_dir, path)  # the parent chain may have changed while we asked
    _write(real, content.encode())
    return f"wrote {len(content.encode())} bytes to {path}"


def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    text = _read_text(ctx, path)
    n = text.count(old) if old else 0
    if n != 1:
        raise ValueError(f"edit_file needs `old` to occur exactly once in {path}; it occurs {n} times")
    ctx.runtime.require_permission("write", {"tool": "edit_file", "path": path})
    writer = _client_fs(ctx, "write")
    if writer is not None:
        writer(resolve(ctx.working_dir, path), text.replace(old, new, 1))
        return f"edited {path}"
    _write(resolve(ctx.working_dir, path, must_exist=True), text.replace(old, new, 1).encode())
    return f"edited {path}"


def run_command(ctx: ToolContext, command: str, timeout: float = 60) -> str:
    ctx.runtime.require_permission("run", {"tool": "run_command", "command": command})
    timeout = max(0.1, min(float(timeout), 600.0))
    p = subprocess.Popen(["/bin/sh", "-c", command], cwd=os.path.realpath(ctx.working_dir),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        status = f"exit code {p.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        status = f"timed out after {timeout:g}s (killed)"
    text = out[:MAX_OUTPUT].decode("utf-8", errors="replace")
    if len(out) > MAX_OUTPUT:
        text += f"\n[… output truncated at {MAX_OUTPUT} bytes]"
    return f"{status}\n{text}"


WORKSPACE_TOOLS = [
    Tool("read_file", "Read a text file (path relative to the working dir).",
         _obj({"path": {"type": "string"}}, ["path"]), read_file),
    Tool("list_dir", "List a directory (relative path, default '.'); directories end with '/'.",
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
