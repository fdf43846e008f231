"""Environment switches (SESSIONDAG_…), read strictly: a value a switch does not take raises
ConfigError naming the variable — never a silent fallback to the default. Unset or empty means the
default."""

from __future__ import annotations

import os

from .errors import ConfigError

OFF = ("0", "off", "false", "no")
ON = ("1", "on", "true", "yes")


def raw(name: str) -> str:
    return os.environ.get(name, "").strip()


def env_int(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    value = raw(name)
    if not value:
        return default
    expected = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(name, value, expected) from None
    if n < minimum or (maximum is not None and n > maximum):
        raise ConfigError(name, value, expected)
    return n


def env_bool(name: str, default: bool) -> bool:
    value = raw(name).lower()
    if not value:
        return default
    if value in ON:
        return True
    if value in OFF:
        return False
    raise ConfigError(name, value, f"one of {'|'.join(ON + OFF)}")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = raw(name).lower()
    if not value:
        return default
    if value not in choices:
        raise ConfigError(name, value, f"one of {'|'.join(choices)}")
    return value


def env_off_or_int(name: str, default: int | None, minimum: int = 0) -> int | None:
    """An integer, or one of the off words (None)."""
    value = raw(name).lower()
    if not value:
        return default
    if value in OFF:
        return None
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(name, value, f"an integer >= {minimum} (bytes) or off") from None
    if n < minimum:
        raise ConfigError(name, value, f"an integer >= {minimum} (bytes) or off")
    return n
