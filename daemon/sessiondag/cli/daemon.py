"""`sessiondag daemon`: manage the daemon that serves a state dir.

    sessiondag daemon start [--wait | --no-wait] [--timeout S] [--idle-timeout S] [--socket PATH] [--json]
                                        detach it and (by default) wait until it answers; every client
                                        starts its daemon so (cli/daemon_start.py): one log,
                                        <state dir>/daemon.log; --json: {pid, socket, log, started}
    sessiondag daemon stop                                       ask it to stop, wait until it is gone
    sessiondag daemon status [--json] [--timeout S]              pid, version, uptime, socket, clients …
    sessiondag daemon logs [-n LINES] [-f]                       the daemon's log (<state dir>/daemon.log)
    every subcommand: --state-dir DIR

The daemon is found through `<state dir>/daemon.pid` (see sessiondag_client/discovery.py), so every
shell reaches the same one whatever its $XDG_RUNTIME_DIR. Exit codes: 0 ok · 1 failed (the reason is
printed; `status`: also a daemon that does not answer within --timeout, named by pid) · 2 usage ·
3 `status`: no daemon runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import TYPE_CHECKING

import orjson

from .common import Parser, fail

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

EXIT_NOT_RUNNING = 3


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="sessiondag daemon", description="Manage the daemon that serves a state dir.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    for name, text in (("start", "start the daemon (detached) and wait until it answers"),
                       ("stop", "stop the daemon (open turns are committed)"),
                       ("status", "what the daemon is doing"), ("logs", "print the daemon's log")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--state-dir", help="state directory (default: $SESSIONDAG_HOME …)")
        if name in ("start", "status"):
            sp.add_argument("--json", action="store_true", help="one JSON object on stdout")
        if name == "status":
            sp.add_argument("--timeout", type=float, default=10.0,
                            help="seconds to wait for the daemon's answer (default 10)")
        if name == "start":
            sp.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                            help="wait until the daemon answers (the default); --no-wait: return once it is "
                                 "spawned")
            sp.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for it (default 20)")
            sp.add_argument("--idle-timeout", type=float, default=None, help="exit after this many idle seconds")
            sp.add_argument("--socket", default=None, help="socket path (default: in the runtime dir)")
        if name == "stop":
            sp.add_argument("--timeout", type=float, default=30.0, help="seconds to wait before SIGTERM")
        if name == "logs":
            sp.add_argument("-n", "--lines", type=int, default=50, help="last N lines (0: all)")
            sp.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    return p


def _human_uptime(s: float) -> str:
    s = int(s)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d " if d else "") + (f"{h}h " if d or h else "") + f"{m}m {s}s"


def _status(sd: str, timeout: float) -> wp.DaemonStatusResult | None:
    """The daemon's status; None if none runs. DaemonNotResponding after `timeout` (a stopped one)."""
    from sessiondag_client import SyncClient
    from sessiondag_client.discovery import find_daemon
    info = find_daemon(sd)
    if info is None:
        return None
    with SyncClient.connect(info["socket"], state_dir=sd, client_name="sessiondag daemon status",
                            timeout=timeout) as c:
        status: wp.DaemonStatusResult = c.status()
        return status


def _print_status(st: wp.DaemonStatusResult) -> None:
    defaults = st.get("defaults") or {}
    rows = [("pid", st["pid"]), ("version", st["version"]), ("uptime", _human_uptime(st["uptime_s"])),
            ("state dir", st["state_dir"]), ("socket", st.get("socket") or "-"),
            ("transports", ", ".join(st["transports"]) or "-"), ("log", st.get("log_path") or "(stderr)"),
            ("provider", f"{defaults.get('provider', '?')} / {defaults.get('model') or 'default model'}"),
            ("sessions", f"{len(st['sessions_open'])} open" + (f": {', '.join(st['sessions_open'])}"
                                                               if st["sessions_open"] else "")),
            ("turns", f"{len(st.get('running_turns') or [])} running" + (
                f": {', '.join(st['running_turns'])}" if st.get("running_turns") else "")),
            ("clients", len(st["clients"]))]
    for k, v in rows:
        print(f"{k:<11} {v}")
    for c in st["clients"]:
        name = (c.get("client_info") or {}).get("name") or "?"
        subs = f" watching {', '.join(c['subscriptions'])}" if c["subscriptions"] else ""
        print(f"  {c['client_id']:<10} {name}{subs}")


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    from sessiondag_client.discovery import DaemonStartError, find_daemon, log_path, socket_for, state_dir_of
    sd = state_dir_of(args.state_dir)
    prog = f"sessiondag daemon {args.cmd}"
    if args.cmd == "start":
        from . import daemon_start
        info = find_daemon(sd)
        started = info is None
        if info is None:
            try:
                info = daemon_start.start(sd, socket=args.socket, idle_timeout=args.idle_timeout,
                                          timeout=args.timeout, wait=args.wait)
            except DaemonStartError as e:
                return fail(prog, str(e))
            started = info.get("started", True)
        if args.json:
            print(orjson.dumps({**info, "started": started}).decode())
        else:
            verb = "started" if started else "already running:"
            print(f"{verb} pid={info['pid']} socket={info['socket']} log={info.get('log') or '-'}")
        return 0
    if args.cmd == "status":
        from sessiondag_client import DaemonNotResponding
        try:
            st = _status(sd, args.timeout)
        except DaemonNotResponding as e:
            return fail(prog, str(e))
        if st is None:
            if args.json:
                print(orjson.dumps({"running": False, "state_dir": sd, "socket": socket_for(sd)}).decode())
            else:
                print(f"not running: no sessiondag daemon serves state dir {sd} "
                      f"(start one with: sessiondag daemon start --state-dir {sd})")
            return EXIT_NOT_RUNNING
        if args.json:
            print(orjson.dumps({"running": True, **st}).decode())
        else:
            _print_status(st)
        return 0
    if args.cmd == "stop":
        return _stop(sd, args.timeout, prog)
    return _logs(log_path(sd), args.lines, args.follow, prog)


def _stop(sd: str, timeout: float, prog: str) -> int:
    from sessiondag_client import SyncClient
    from sessiondag_client.discovery import pid_alive, read_pidfile
    info = read_pidfile(sd)
    if info is None:
        print(f"not running: no sessiondag daemon serves state dir {sd}")
        return 0
    pid = info["pid"]
    try:
        sock = info["socket"]   # as the pidfile holds it: no socket, or not a path, falls back as below
        if not isinstance(sock, str):
            raise TypeError(f"the pidfile names no socket: {sock!r}")
        with SyncClient.connect(sock, state_dir=sd, client_name="sessiondag daemon stop") as c:
            c.stop_daemon()
    except Exception:  # noqa: BLE001 - not answering: fall back to the signal
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and read_pidfile(sd) is not None:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            print(f"{prog}: pid {pid} still running after {timeout:.0f}s; sent SIGTERM", file=sys.stderr)
        time.sleep(0.02)
    print(f"stopped pid={pid}")
    return 0


def _logs(path: str, lines: int, follow: bool, prog: str) -> int:
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return fail(prog, f"no log yet at {path} (the daemon logs there when started with `sessiondag daemon start`)")
    with f:
        data = f.read()
        rows = data.decode(errors="replace").splitlines(keepends=True)
        sys.stdout.write("".join(rows[-lines:] if lines > 0 else rows))
        sys.stdout.flush()
        while follow:
            chunk = f.read()
            if chunk:
                sys.stdout.write(chunk.decode(errors="replace"))
                sys.stdout.flush()
            else:
                try:
                    time.sleep(0.2)
                except KeyboardInterrupt:
                    return 0
    return 0
