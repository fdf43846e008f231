"""The adapter's own read of a file's old text (for a diff) neither blocks on a FIFO nor follows a
symlink at the last component (issue 19, item 3: the tools' rule holds in the adapter too)."""

import os
import threading

import pytest

from sessiondag.acp.daemon_requests import read_local


def test_read_local_refuses_fifos_without_blocking_and_symlinks(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "real.txt").write_text("old text")
    os.symlink(tmp_path / "real.txt", tmp_path / "link")
    out = {}

    def go():
        for name in ("pipe", "link"):
            with pytest.raises(OSError):
                read_local(str(tmp_path / name))
        out["text"] = read_local(str(tmp_path / "real.txt"))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "read_local blocked on a FIFO"
    assert out["text"] == "old text"
