"""One read loop for every transport (issue 22, item 4): in the daemon package only rpc/connection.py
reads JSON-RPC frames (`Connection.run`, with its MAX_IN_FLIGHT backpressure), and `sessiondag serve`
hands every transport it opens (socket, TCP, stdio) to a Connection and runs it. An earlier copy of
the loop in cli/serve.py had dropped the in-flight limit; tests/e2e/test_read_loop.py shows the
behaviour over stdio and a socket, this scan keeps a second loop from coming back.

(acp/transport.py reads another protocol, ACP's newline-delimited JSON, for the ACP SDK: not ours.)"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from source_tree import modules

import sessiondag

PKG = Path(sessiondag.__file__).parent
FRAME_READERS = {"read_frame", "receive_frame", "FrameBuffer"}


def frame_reads(tree: ast.AST) -> list[int]:
    """Lines that name one of the frame readers (as an attribute, a name or an import)."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in FRAME_READERS:
            lines.append(n.lineno)
        elif isinstance(n, ast.Name) and n.id in FRAME_READERS:
            lines.append(n.lineno)
        elif isinstance(n, ast.ImportFrom) and any(a.name in FRAME_READERS for a in n.names):
            lines.append(n.lineno)
    return lines


def test_only_the_connection_reads_frames():
    readers = {}
    for m in modules():
        rel = m.rel.replace(os.sep, "/")
        if rel == "rpc/codec.py":  # the re-export of the shared codec
            continue
        lines = frame_reads(m.tree)
        if lines:
            readers[rel] = lines
    assert list(readers) == ["rpc/connection.py"], readers


def test_every_transport_of_serve_runs_a_connection():
    tree = ast.parse((PKG / "cli" / "serve.py").read_text())
    transports = {kw.value.value for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name) and n.func.id == "Connection"
                  for kw in n.keywords if kw.arg == "transport" and isinstance(kw.value, ast.Constant)}
    assert transports == {"socket", "tcp", "stdio"}
    assert not frame_reads(tree)


def test_the_scan_sees_a_second_loop():
    assert frame_reads(ast.parse("from x import read_frame\nasync def f(r):\n    await codec.read_frame(r, 1)\n")) \
        == [1, 3]
