"""Where a process's settings come from: the one module that reads the config file and the
environment for them. A `SettingsSource` gives a fresh `Settings` snapshot per call (the switches are
read at call time: a run may move one variable without a reimport), cached while the environment and
the file are unchanged (one stat and a few dictionary reads per call).

    config file: $SESSIONDAG_CONFIG, else $XDG_CONFIG_HOME/sessiondag/config.toml,
                 else ~/.config/sessiondag/config.toml (none: the defaults)

The process source (`current()`) has no flags until the command line installs one with them
(`install`); the store, rendering and runtime take their settings from whoever built them and fall
back to it. A broken file raises ConfigError naming the file.
"""

from __future__ import annotations

import itertools
import os
import threading
import tomllib
from typing import Any, Mapping

from .errors import ConfigError
from .settings import ENV_VARS, Settings, merge, profile_key_vars

WATCHED = ("SESSIONDAG_CONFIG", "XDG_CONFIG_HOME", "HOME") + ENV_VARS + ("XDG_STATE_HOME",)
_generation = itertools.count(1)


def _values(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The raw values of `names` in `env`. For the process environment, read from os.environ's own
    dictionary: Mapping.get raises and catches KeyError per missing name, ~20x slower, and this runs
    on every append."""
    data = getattr(env, "_data", None) if env is os.environ else None
    if isinstance(data, dict):
        return tuple(map(data.get, _encoded(names)))
    return tuple(env.get(n) for n in names)


_ENCODED: dict[tuple[str, ...], tuple[bytes, ...]] = {}


def _encoded(names: tuple[str, ...]) -> tuple[bytes, ...]:
    enc = _ENCODED.get(names)
    if enc is None:
        enc = _ENCODED[names] = tuple(os.fsencode(n) for n in names)
    return enc


def config_path(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    explicit = env.get("SESSIONDAG_CONFIG")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "sessiondag", "config.toml")


def read_file(path: str) -> dict[str, Any] | None:
    """The parsed config file, None when there is none; unreadable or not TOML: ConfigError naming it."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(path, "", f"a readable TOML config file ({e})") from None


class SettingsSource:
    """Settings of defaults < the config file < the environment < `flags` (setting name -> raw
    value, or (value, flag label)). `environ` defaults to the live process environment."""

    def __init__(self, flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None):
        self.flags = dict(flags or {})
        self._environ = environ
        self._mutex = threading.Lock()
        self._file: tuple[str, Any, int, dict[str, Any] | None, tuple[str, ...]] | None = None
        # ^ path, stat key, generation, table, the variables its profiles name
        self._path: tuple[Any, str] | None = None   # (SESSIONDAG_CONFIG, XDG_CONFIG_HOME, HOME) -> path
        self._last: tuple[Any, Settings] | None = None

    def _read(self, path: str) -> tuple[int, dict[str, Any] | None, tuple[str, ...]]:
        try:
            st = os.stat(path)
            stamp: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        except OSError as e:
            raise ConfigError(path, "", f"a readable TOML config file ({e})") from None
        f = self._file
        if f is not None and f[0] == path and f[1] == stamp:
            return f[2], f[3], f[4]
        table = read_file(path) if stamp is not None else None
        gen, names = next(_generation), profile_key_vars(table)
        self._file = (path, stamp, gen, table, names)
        return gen, table, names

    def __call__(self) -> Settings:
        env = os.environ if self._environ is None else self._environ
        raw = _values(env, WATCHED)
        with self._mutex:
            p = self._path
            if p is None or p[0] != raw[:3]:
                p = self._path = (raw[:3], config_path(env))
            path = p[1]
            gen, table, names = self._read(path)
        key = (raw, path, gen, _values(env, names) if names else ())
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        settings = merge(environ=env, file=table, file_path=path, flags=self.flags)
        self._last = (key, settings)
        return settings


_process = SettingsSource()


def current() -> Settings:
    """The process's settings now (the installed source; a bad value raises ConfigError)."""
    return _process()


def process_source() -> SettingsSource:
    return _process


def install(source: SettingsSource) -> None:
    """Make `source` (e.g. built with the command line's flags) the process's."""
    global _process
    _process = source
