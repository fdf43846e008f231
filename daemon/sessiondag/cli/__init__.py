"""The `sessiondag` command: one subcommand per module in this package.

    sessiondag serve …      the daemon (cli/serve.py)
    sessiondag run …        a headless agent run (cli/run.py)
    sessiondag sessions …   inspect sessions (cli/sessions.py)
    sessiondag replay …     re-send a recorded model call with overrides (cli/replay.py)
    sessiondag demo         the end-to-end demo (cli/demo.py)
    sessiondag daemon …     start / stop / status / logs of the daemon (cli/daemon.py)
    sessiondag chat         an interactive terminal chat (cli/chat.py)
    sessiondag resume       pick a session and chat with it (cli/resume.py)
    sessiondag config       the effective settings and where each came from (cli/config.py)
    sessiondag sync …       push / pull / clone / list sessions through a git remote (cli/sync.py)
    sessiondag gc …         prune old sessions, pack the rest (cli/gc.py)
    sessiondag mcp …        the MCP servers of a working dir: list / add / remove / test (cli/mcp.py)
    sessiondag view [S]     a session's report, live in the browser (cli/view.py)

    sessiondag -c NAME=VALUE … <command>   a setting for this process only (flags beat the
                                           environment, the config file and the defaults)
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "serve": "Run the JSON-RPC daemon (stdio, Unix socket or loopback TCP).",
    "run": "Run an agent task headless (through the daemon when one runs, else a private one).",
    "sessions": "Sessions: list | show | branches | log | render | checkout | name | export | delete | watch | "
                "usage | compare.",
    "replay": "Re-send a recorded model call with another model, prompt or edits, onto a new branch.",
    "demo": "Run the end-to-end demo on a temporary workspace.",
    "acp": "Serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim ACP clients).",
    "daemon": "Manage the daemon of a state dir: start | stop | status | logs.",
    "chat": "Chat with a session in the terminal (--continue, --session ID, --new).",
    "resume": "Pick a session of this working dir and chat with it.",
    "config": "Print the effective settings and where each came from (default, file, env, flag).",
    "sync": "Sessions through a git remote: remote add | push | pull | clone | list.",
    "gc": "Prune old sessions (never unpushed ones unless --force) and pack the rest.",
    "mcp": "MCP servers of a working dir's sessions: list | add | remove | test.",
    "view": "Open a session's report live in the browser (127.0.0.1, one-time token).",
}


def usage() -> str:
    lines = ["usage: sessiondag [-c NAME=VALUE]... <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {text}" for name, text in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ..core.errors import ConfigError
    from ..core.settings_source import SettingsSource, install
    try:
        flags, argv = setting_flags(argv)
    except ConfigError as e:
        print(f"sessiondag: {e}", file=sys.stderr)
        return 2
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
    try:
        # resolved once, here, for the whole command: its store and runtime keep this object
        # (a bad setting of the file, the environment or a flag stops every command at start, named)
        install(SettingsSource(flags)())
    except ConfigError as e:
        print(f"sessiondag: {e}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"{__name__}.{cmd}")
    if cmd in ("config", "run"):   # run: its private daemon gets the same flags
        return int(module.main(argv[1:], flags) or 0)
    return int(module.main(argv[1:]) or 0)


def setting_flags(argv: list[str]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """The leading `-c NAME=VALUE` / `--set NAME=VALUE` pairs (setting name -> (value, flag label))
    and the rest of argv. An unknown name or a missing `=` raises ConfigError."""
    from ..core.errors import ConfigError
    from ..core.settings import spec
    flags: dict[str, tuple[str, str]] = {}
    while argv and (argv[0] in ("-c", "--set") or argv[0].startswith("--set=")):
        if argv[0].startswith("--set="):
            item, argv = argv[0][len("--set="):], argv[1:]
        elif len(argv) < 2:
            raise ConfigError(argv[0], "", "NAME=VALUE after it")
        else:
            item, argv = argv[1], argv[2:]
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"-c {item}", item, "NAME=VALUE")
        try:
            s = spec(name.strip())
        except ConfigError as e:  # the flag as typed, not an empty value
            raise ConfigError(f"-c {name.strip()}", value, e.expected) from None
        flags[s.name] = (value, f"-c {s.name}")
    return flags, argv
