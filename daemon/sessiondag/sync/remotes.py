"""Named remotes of a state dir (`sessiondag sync remote add NAME URL [--default]`), kept in
`<state>/sync/remotes.json`: {"remotes": {NAME: URL}, "default": NAME | null, "auto_push":
{"sessions": {ID: REMOTE | "off"}, "working_dirs": {DIR: REMOTE | "off"}}}. A REMOTE argument
is a name from there or a git URL (a path, file://, git://, http(s)://, ssh://, scp-style).

Auto-push rules (`sessiondag sync auto-push`): the remote a session is pushed to after each turn
commit is its own rule, else its working dir's, else the setting `sync.auto_push`; "off" stops it
at that level."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

import orjson

from ..core import wire_types
from ..store.durable_files import write_file_atomic
from .errors import SyncError, UnknownRemoteError
from .layout import remote_key
from .transport import Bounds

if TYPE_CHECKING:
    from ..core.settings import Settings

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Remote:
    key: str        # tracking-ref component: the name, or url-<hash> for an unnamed URL
    url: str
    name: str | None = None
    bounds: Bounds = Bounds()   # what a transfer with it may take (transport.py; Bounds.of(settings))


class AutoPush(TypedDict):
    sessions: dict[str, str]        # session id -> remote name or "off"
    working_dirs: dict[str, str]    # real path -> remote name or "off"


class RemotesFile(TypedDict):
    """sync/remotes.json as `load` checked it."""
    remotes: dict[str, str]         # name -> url
    default: str | None
    auto_push: AutoPush


# a configured remote as remote/list and `sync remote list` show it (core/wire_types.py, generated)
RemoteRow = wire_types.RemoteListResultRemotesItem


def _path(state_dir: str) -> str:
    return os.path.join(state_dir, "sync", "remotes.json")


def load(state_dir: str) -> RemotesFile:
    try:
        with open(_path(state_dir), "rb") as f:
            data = orjson.loads(f.read())
    except FileNotFoundError:
        return {"remotes": {}, "default": None, "auto_push": {"sessions": {}, "working_dirs": {}}}
    except (OSError, orjson.JSONDecodeError) as e:
        raise SyncError(f"{_path(state_dir)} unreadable: {e}") from None
    remotes = data.get("remotes") if isinstance(data, dict) else None
    if not isinstance(remotes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in remotes.items()):
        raise SyncError(f"{_path(state_dir)} is not a remotes file")
    default = data.get("default")
    auto = data.get("auto_push") if isinstance(data.get("auto_push"), dict) else {}
    rules = {k: {a: b for a, b in (auto.get(k) or {}).items() if isinstance(a, str) and isinstance(b, str)}
             if isinstance(auto.get(k), dict) else {} for k in ("sessions", "working_dirs")}
    return {"remotes": remotes, "default": default if default in remotes else None,
            "auto_push": {"sessions": rules["sessions"], "working_dirs": rules["working_dirs"]}}


def _save(state_dir: str, data: RemotesFile) -> None:
    os.makedirs(os.path.dirname(_path(state_dir)), mode=0o700, exist_ok=True)
    write_file_atomic(_path(state_dir), orjson.dumps(data, option=orjson.OPT_INDENT_2))


def set_auto_push(state_dir: str, remote: str | None, *, session_id: str | None = None,
                  working_dir: str | None = None) -> None:
    """The auto-push rule of one session or working dir: a remote (checked: resolve), "off", or
    None (no rule: the next level decides)."""
    if (session_id is None) == (working_dir is None):
        raise SyncError("an auto-push rule is for a session or for a working dir")
    if remote not in (None, "off"):
        resolve(state_dir, remote)
    data = load(state_dir)
    rules, key = (data["auto_push"]["sessions"], session_id) if session_id is not None else \
        (data["auto_push"]["working_dirs"], os.path.realpath(working_dir or ""))
    if remote is None:
        rules.pop(key, None)
    else:
        rules[key] = remote
    _save(state_dir, data)


def auto_push_for(state_dir: str, session_id: str, working_dir: str | None, setting: str | None) -> str | None:
    """The remote to push `session_id` to after a turn commit, or None (see the module docstring)."""
    try:
        rules = load(state_dir)["auto_push"]
    except SyncError:
        return setting
    rule = rules["sessions"].get(session_id)
    if rule is None and working_dir:
        rule = rules["working_dirs"].get(os.path.realpath(working_dir))
    if rule is None:
        return setting
    return None if rule == "off" else rule


def add(state_dir: str, name: str, url: str, *, default: bool = False) -> Remote:
    if not _NAME.fullmatch(name):
        raise SyncError(f"remote name {name!r}: use 1-64 of [A-Za-z0-9_-]", name=name)
    if not url or url.startswith("-"):
        raise SyncError(f"remote url {url!r} is not a git URL", url=url)
    data = load(state_dir)
    data["remotes"][name] = url
    if default or data["default"] is None:
        data["default"] = name
    _save(state_dir, data)
    return Remote(name, url, name)


def remove(state_dir: str, name: str) -> bool:
    data = load(state_dir)
    if name not in data["remotes"]:
        return False
    del data["remotes"][name]
    if data["default"] == name:
        data["default"] = next(iter(data["remotes"]), None)
    _save(state_dir, data)
    return True


def bounded(remote: Remote, settings: Settings) -> Remote:
    """`remote` held to the settings' transfer bounds, unless the caller gave it bounds of its own."""
    return remote if remote.bounds != Bounds() else replace(remote, bounds=Bounds.of(settings))


def resolve(state_dir: str, remote: str | None) -> Remote:
    """A configured name, else a URL as given; None: the default remote."""
    data = load(state_dir)
    if remote is None:
        if data["default"] is None:
            raise UnknownRemoteError("no remote given and no default remote (sessiondag sync remote add NAME URL)")
        remote = data["default"]
    if remote in data["remotes"]:
        return Remote(remote, data["remotes"][remote], remote)
    if _NAME.fullmatch(remote) and not os.path.exists(remote):
        raise UnknownRemoteError(f"no remote named {remote!r} (and no such path)", remote=remote)
    if remote.startswith("-"):
        raise UnknownRemoteError(f"{remote!r} is not a remote", remote=remote)
    return Remote(remote_key(remote), remote, None)


def listed(state_dir: str) -> list[RemoteRow]:
    data = load(state_dir)
    return [{"name": n, "url": u, "default": n == data["default"]} for n, u in sorted(data["remotes"].items())]
