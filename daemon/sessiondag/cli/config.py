"""`sessiondag config`: the effective settings of this process and where each came from.

    sessiondag [-c NAME=VALUE]... config [--json] [--state-dir DIR] [--session ID]

One line per setting: its name (`section.key`, as in the config file), its value and its source —
`default`, `file <path>`, `env <VARIABLE>` or `flag <-c NAME | --state-dir>`. Keys are shown as
`<set>`, never printed. `--session ID` adds the write policy the session records (which wins over
this process's settings for that session: docs/settings.md). Exit 2 on a bad setting, naming it.
"""

from __future__ import annotations

import argparse
import sys
from typing import NotRequired, TypedDict

import orjson

from ..core.errors import ConfigError, SessionDagError
from ..core.settings import Settings, WritePolicy, described
from ..core.settings_source import SettingsSource, config_path
from .common import NoSession, Parser, UsageError, fail, resolve_session


class Overridden(TypedDict):
    """A setting this process sets on purpose that the session's recorded write policy overrides."""
    name: str
    recorded: object
    this_process: object
    source: str


class SessionPolicy(TypedDict):
    session_id: str
    write_policy: WritePolicy | None           # store/write_policy.py `recorded`
    overridden: list[Overridden]


class Report(TypedDict):
    """What `sessiondag config` prints (--json: as it is)."""
    config_file: str
    config_file_read: bool
    settings: list[dict[str, object]]          # core/settings.py `described`: name, value, source, origin …
    providers: dict[str, dict[str, object]]
    working_dirs: dict[str, dict[str, str]]
    session: NotRequired[SessionPolicy]


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = Parser(prog="sessiondag config", description="Print the effective settings and their sources.")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--state-dir", default=None, help="a state directory (a flag: beats $SESSIONDAG_HOME)")
    ap.add_argument("--session", default=None, metavar="ID", help="also show the write policy this session records")
    return ap.parse_args(argv)


def _session_policy(settings: Settings, ref: str) -> SessionPolicy:
    from ..context.store_factory import open_store
    from ..store.write_policy import disagreements, recorded
    store = open_store(settings.state_dir, settings=settings)
    try:
        sid = resolve_session(store, ref)
        with store.session(sid).lock:
            policy = recorded(store.session(sid).graph.extra, sid)
    finally:
        store.close()
    return {"session_id": sid, "write_policy": policy,
            "overridden": [{"name": n, "recorded": theirs, "this_process": mine, "source": where}
                           for n, theirs, mine, where in (disagreements(policy, settings) if policy else [])]}


def report(settings: Settings, path: str) -> Report:
    return {"config_file": path, "config_file_read": settings.config_file is not None,
            "settings": described(settings),
            "providers": {name: {k: p.get(k) for k in ("kind", "model", "base_url") if p.get(k) is not None}
                          for name, p in settings.providers.items()},
            "working_dirs": {"remap": dict(settings.working_dir_remap)}}


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(value) or "-"
    return str(value)


def _print_text(out: Report) -> None:
    print(f"config file: {out['config_file']}" + ("" if out["config_file_read"] else " (none)"))
    rows = [(str(s["name"]), "off" if s["name"] == "store.node_spill" and s["value"] is None else _shown(s["value"]),
             str(s["source"]) + (f" {s['origin']}" if s["origin"] else "")) for s in out["settings"]]   # strs
    w1 = max(len(r[0]) for r in rows)
    w2 = min(max(len(r[1]) for r in rows), 48)
    for name, value, source in rows:
        print(f"{name:<{w1}}  {value:<{w2}}  {source}")
    for name, p in out["providers"].items():
        print(f"providers.{name}: " + " ".join(f"{k}={v}" for k, v in p.items()))
    for old, new in out["working_dirs"]["remap"].items():
        print(f"working_dirs.remap: {old} -> {new}")
    sess = out.get("session")
    if sess:
        policy = sess["write_policy"]
        if policy is None:
            print(f"session {sess['session_id']}: no write policy recorded yet (its first write records this process's)")
        else:
            shown = " ".join(f"{k}={'off' if v is None else v}" for k, v in policy.items())
            print(f"session {sess['session_id']} write policy: {shown}")
        for o in sess["overridden"]:
            print(f"  {o['name']}: this process's {o['this_process']} ({o['source']}) is not used for this session")


def main(argv: list[str], flags: dict[str, tuple[str, str]] | None = None) -> int:
    try:
        a = parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    flags = dict(flags or {})
    if a.state_dir:
        flags["store.state_dir"] = (a.state_dir, "--state-dir")
    try:
        settings = SettingsSource(flags)()
        out = report(settings, config_path())
        if a.session:
            out["session"] = _session_policy(settings, a.session)
    except ConfigError as e:
        return fail("sessiondag config", str(e), 2)
    except UsageError as e:
        return fail("sessiondag config", str(e), 2)
    except (NoSession, SessionDagError) as e:
        return fail("sessiondag config", str(e), 1)
    if a.json:
        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        _print_text(out)
    return 0
