"""Before/after blob ids of the files a file-writing tool call changed (docs/checkpoints.md).

`FileRecorder(w, tool_name, args, wd)` reads the file a write_file / edit_file call names before the
call and again after it (through workspace/beneath.py: no symlink followed), stores both contents as
blobs of the session repository and gives the tool node's metadata entry
`workspace_files: [{path, before_blob, after_blob}]` (None: the file did not exist, or was over
`workspace.max_file_bytes`). The commit keeps the blobs reachable (store/snapshot.py). ACP clients
get their tool-call diffs from these blobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.checkpoint import FILES_KEY
from ..core.errors import PathRefusedError
from ..workspace.beneath import Beneath

if TYPE_CHECKING:
    from .writer import SessionWriter

FILE_TOOLS = {"write_file": "path", "edit_file": "path"}


class FileRecorder:
    def __init__(self, w: SessionWriter, tool_name: str, args: object, wd: str):
        key = FILE_TOOLS.get(tool_name)
        path = args.get(key) if key and isinstance(args, dict) else None
        self.w, self.wd = w, wd
        self.path = path if isinstance(path, str) and path else None
        self.limit = w.session.settings().max_file_bytes
        self.resolver = w.session.settings().beneath
        self.before = self._blob() if self.path else None

    def _blob(self) -> str | None:
        assert self.path is not None  # only called for a tool with a path
        try:
            with Beneath(self.wd, resolver=self.resolver) as b:
                data = b.read_bytes(self.path, limit=self.limit)
        except (OSError, PathRefusedError):
            return None
        if len(data) > self.limit:
            return None
        return self.w.put_blob(data)

    def metadata(self) -> dict[str, object]:
        """The tool node's metadata entry, once the call has run ({} for other tools)."""
        if self.path is None:
            return {}
        after = self._blob()
        if after == self.before:
            return {}
        return {FILES_KEY: [{"path": self.path, "before_blob": self.before, "after_blob": after}]}
