"""The `sessiondag` command: one subcommand per module in this package.

    sessiondag serve …      the daemon (cli/serve.py)
    sessiondag run …        a headless agent run (cli/run.py)
    sessiondag sessions …   inspect sessions (cli/sessions.py)
    sessiondag demo         the end-to-end demo (cli/demo.py)
    sessiondag daemon …     start / stop / status / logs of the daemon (cli/daemon.py)
    sessiondag resume       pick a session and continue it (cli/resume.py)
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "serve": "Run the JSON-RPC daemon (stdio, Unix socket or loopback TCP).",
    "run": "Run an agent task headless (through the daemon when one runs, else in-process).",
    "sessions": "Sessions: list | show | branches | log | render | checkout | name | export | delete | watch.",
    "demo": "Run the end-to-end demo on a temporary workspace.",
    "acp": "Serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim ACP clients).",
    "daemon": "Manage the daemon of a state dir: start | stop | status | logs.",
    "resume": "Pick a session of this working dir and continue it.",
}


def usage() -> str:
    lines = ["usage: sessiondag <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from .. import __version__
        print(f"sessiondag {__version__}")
        return 0
    cmd = argv[0]
    if cmd not in COMMANDS:
        print(f"sessiondag: unknown command {cmd!r} (see sessiondag --help)", file=sys.stderr)
        return 2
    from ..context.policy import check_environment
    from ..core.errors import ConfigError
    try:
        check_environment()  # a bad SESSIONDAG_… switch stops every command at start, named
    except ConfigError as e:
        print(f"sessiondag: {e}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"{__name__}.{cmd}")
    return int(module.main(argv[1:]) or 0)
