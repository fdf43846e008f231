"""`sessiondag view [S]`: the report's viewer live in the browser (docs/report.md, "Live").

    sessiondag view [SESSION] [--state-dir DIR] [--no-browser] [--redact PATTERN]… [--max-body-kb KB]

SESSION (id or unique prefix) defaults to this directory's newest session. Serves the viewer on
127.0.0.1 (a free port) behind a one-time token (report/bridge.py), follows the session through the
daemon (started when none serves the state dir: report/follow.py), prints the URL on stdout and
opens it in the default browser (not with --no-browser). Runs until Ctrl-C / SIGTERM or the daemon
goes. Exit codes: 0 stopped · 1 no such session / the daemon went away · 2 usage.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading

from .common import NoSession, Parser, command, resolve_session
from .report import add_report_arguments, report_limits

PROG = "sessiondag view"


def parser() -> Parser:
    p = Parser(prog=PROG, description="Open a session's live viewer in the browser.")
    p.add_argument("session_id", nargs="?", help="the session (default: this directory's newest)")
    p.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
    p.add_argument("--no-browser", action="store_true", help="print the URL only")
    add_report_arguments(p)
    return p


@command(PROG, lambda: ((NoSession, 1),))
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    limits = report_limits(args)
    assert limits is not None  # view has no --format: always the html report's limits
    import anyio
    from ..report.bridge import Bridge
    from ..report.live import LiveDocument
    from ..report.follow import follow
    from ..context.store_factory import open_store
    from ..sync.summary import title_of
    from .catalog import summaries
    store = open_store(args.state_dir)
    try:
        if args.session_id:
            sid = resolve_session(store, args.session_id)
        else:
            rows = summaries(store, os.path.realpath(os.getcwd()))
            if not rows:
                raise NoSession("no session of this working dir (pass a session id)")
            sid = rows[0]["session_id"]
        s = store.session(sid)
        live = LiveDocument(s, limits)
        gc.freeze()     # the document stays for the process's life: no full collection walks it again
        bridge = Bridge(live, title_of(s.graph) or sid)
    except NoSession:
        store.close()
        raise
    server = threading.Thread(target=bridge.serve_forever, name="sessiondag-view-http", daemon=True)
    server.start()

    def ready() -> None:
        print(bridge.url, flush=True)
        print(f"{PROG}: serving {sid} on 127.0.0.1:{bridge.server_port} (Ctrl-C stops)", file=sys.stderr)
        if not args.no_browser:
            import webbrowser
            webbrowser.open(bridge.url)

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    try:
        why = anyio.run(follow, store.state_dir, sid, live.changed, ready, live.text)
        print(f"{PROG}: {why}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except (OSError, ConnectionError) as e:
        print(f"{PROG}: lost the daemon: {e}", file=sys.stderr)
        return 1
    finally:
        bridge.close()
        store.close()
