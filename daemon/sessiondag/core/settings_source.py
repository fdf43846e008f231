"""Where a process's settings come from: the one module that reads the config file and the
environment for them. An entry point (the command line, the daemon, `open_store`, a library
object's constructor) resolves them once and hands the frozen `Settings` down; a store, a session,
a renderer or a runtime never reads them again (no stat of the file, no look at the environment
on a write or a render: tests/test_settings_edge.py).

    config file: $SESSIONDAG_CONFIG, else $XDG_CONFIG_HOME/sessiondag/config.toml,
                 else ~/.config/sessiondag/config.toml (none: the defaults)

The process source (`current()`) has no flags until the command line installs its resolved
Settings (`install`). A broken file raises ConfigError naming the file.
"""

from __future__ import annotations

import os
import tomllib
from typing import Mapping

from .errors import ConfigError
from .settings import Settings, merge


def config_path(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    explicit = env.get("SESSIONDAG_CONFIG")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "sessiondag", "config.toml")


def read_file(path: str) -> dict[str, object] | None:
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
    value, or (value, flag label)). `environ` defaults to the live process environment. Each call
    resolves them now: it reads the file and the environment (so it belongs at an entry point,
    called once, its result handed down; nothing on a write or render path calls it)."""

    def __init__(self, flags: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None):
        self.flags = dict(flags or {})
        self._environ = environ

    def __call__(self) -> Settings:
        env = os.environ if self._environ is None else self._environ
        path = config_path(env)
        return merge(environ=env, file=read_file(path), file_path=path, flags=self.flags)


_process: SettingsSource | Settings = SettingsSource()


def current() -> Settings:
    """The process's settings: resolved now from the installed source (a bad value raises
    ConfigError), or the Settings the command line resolved and installed. For entry points
    (the command line, `open_store`, a library object's constructor): each resolves once and
    hands the frozen result down."""
    return _process if isinstance(_process, Settings) else _process()


def install(source: SettingsSource | Settings) -> None:
    """Make `source` the process's: a source (e.g. built with the command line's flags) or the
    Settings an entry point resolved once, which `current()` then returns as they are."""
    global _process
    _process = source
