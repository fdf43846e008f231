"""Named remotes of a state dir (`sessiondag sync remote add NAME URL [--default]`), kept in
`<state>/sync/remotes.json`: {"remotes": {NAME: URL}, "default": NAME | null}. A REMOTE argument
is a name from there or a git URL (a path, file://, git://, http(s)://, ssh://, scp-style)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

import orjson

from ..store.durable_files import write_file_atomic
from .errors import SyncError, UnknownRemoteError
from .layout import remote_key
from .transport import Bounds

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Remote:
    key: str        # tracking-ref component: the name, or url-<hash> for an unnamed URL
    url: str
    name: str | None = None
    bounds: Bounds = Bounds()   # what a transfer with it may take (transport.py; Bounds.of(settings))


def _path(state_dir: str) -> str:
    return os.path.join(state_dir, "sync", "remotes.json")


def load(state_dir: str) -> dict[str, Any]:
    try:
        with open(_path(state_dir), "rb") as f:
            data = orjson.loads(f.read())
    except FileNotFoundError:
        return {"remotes": {}, "default": None}
    except (OSError, orjson.JSONDecodeError) as e:
        raise SyncError(f"{_path(state_dir)} unreadable: {e}") from None
    remotes = data.get("remotes") if isinstance(data, dict) else None
    if not isinstance(remotes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in remotes.items()):
        raise SyncError(f"{_path(state_dir)} is not a remotes file")
    default = data.get("default")
    return {"remotes": remotes, "default": default if default in remotes else None}


def add(state_dir: str, name: str, url: str, *, default: bool = False) -> Remote:
    if not _NAME.fullmatch(name):
        raise SyncError(f"remote name {name!r}: use 1-64 of [A-Za-z0-9_-]", name=name)
    if not url or url.startswith("-"):
        raise SyncError(f"remote url {url!r} is not a git URL", url=url)
    data = load(state_dir)
    data["remotes"][name] = url
    if default or data["default"] is None:
        data["default"] = name
    os.makedirs(os.path.dirname(_path(state_dir)), mode=0o700, exist_ok=True)
    write_file_atomic(_path(state_dir), orjson.dumps(data, option=orjson.OPT_INDENT_2))
    return Remote(name, url, name)


def remove(state_dir: str, name: str) -> bool:
    data = load(state_dir)
    if name not in data["remotes"]:
        return False
    del data["remotes"][name]
    if data["default"] == name:
        data["default"] = next(iter(data["remotes"]), None)
    write_file_atomic(_path(state_dir), orjson.dumps(data, option=orjson.OPT_INDENT_2))
    return True


def bounded(remote: Remote, settings: Any) -> Remote:
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


def listed(state_dir: str) -> list[dict[str, Any]]:
    data = load(state_dir)
    return [{"name": n, "url": u, "default": n == data["default"]} for n, u in sorted(data["remotes"].items())]
