"""`sessiondag acp`: an Agent Client Protocol agent on stdio for ACP editors (Zed, JetBrains,
Neovim's CodeCompanion / avante, Emacs agent-shell). A thin adapter over the daemon: it connects to
the daemon serving the state dir (starting one when none runs) and runs every turn there.

    sessiondag acp [--state-dir DIR] [--socket PATH] [--no-auto-start] [--context-window N] [-v]

stdout carries the protocol only; logs and one readiness line (`sessiondag: acp ready pid=…`) go
to stderr. See docs/acp.md."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="sessiondag acp", description="Serve the Agent Client Protocol on stdio.")
    ap.add_argument("--state-dir", default=None, help="session store of the daemon to use (default $SESSIONDAG_HOME …)")
    ap.add_argument("--socket", default=None, help="the daemon's Unix socket (default: the one serving the state dir)")
    ap.add_argument("--no-auto-start", action="store_true", help="fail instead of starting a daemon when none runs")
    ap.add_argument("--context-window", type=int, default=128_000, help="context size reported in usage_update")
    ap.add_argument("--page-size", type=int, default=50, help="sessions per session/list page")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if a.verbose else logging.WARNING,
                        format="sessiondag-acp: %(levelname)s %(message)s")
    try:
        import acp  # noqa: F401
    except ImportError:
        print("sessiondag acp needs the Agent Client Protocol SDK: pip install 'sessiondag[acp]'", file=sys.stderr)
        return 2
    from ..acp.agent import SessiondagAgent, serve
    agent = SessiondagAgent(state_dir=a.state_dir, socket=a.socket, auto_start=not a.no_auto_start,
                            context_window=a.context_window, page_size=max(1, a.page_size))
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        pass
    return 0
