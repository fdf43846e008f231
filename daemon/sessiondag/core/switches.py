"""Strict parsers of setting values: a value a setting does not take raises ConfigError naming where
it came from (the environment variable, `<config file>: section.key`, or the flag) — never a silent
fallback to the default. Pure: the caller (core/settings.py) hands in the raw value.

A raw value is a string (environment, flags) or a TOML value (the config file). An empty string
means "not set here" and is never passed in.
"""

from __future__ import annotations

import re

from typing import SupportsFloat, SupportsIndex, cast

from .errors import ConfigError

OFF = ("0", "off", "false", "no")
ON = ("1", "on", "true", "yes")


def shown(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def parse_int(label: str, value: object, minimum: int = 0, maximum: int | None = None) -> int:
    expected = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    if isinstance(value, bool):
        raise ConfigError(label, shown(value), expected)
    if isinstance(value, int):
        n = value
    else:
        try:
            n = int(str(value).strip())
        except ValueError:
            raise ConfigError(label, shown(value), expected) from None
    if n < minimum or (maximum is not None and n > maximum):
        raise ConfigError(label, shown(value), expected)
    return n


def parse_bool(label: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    raise ConfigError(label, shown(value), f"one of {'|'.join(ON + OFF)}")


def parse_choice(label: str, value: object, choices: tuple[str, ...]) -> str:
    word = value.strip().lower() if isinstance(value, str) else None
    if word not in choices:
        raise ConfigError(label, shown(value), f"one of {'|'.join(choices)}")
    return word


def parse_off_or_int(label: str, value: object, minimum: int = 0) -> int | None:
    """An integer, or one of the off words (None); `false` in the config file is off too."""
    expected = f"an integer >= {minimum} (bytes) or off"
    if value is False or (isinstance(value, str) and value.strip().lower() in OFF):
        return None
    try:
        return parse_int(label, value, minimum)
    except ConfigError:
        raise ConfigError(label, shown(value), expected) from None


def parse_off_or_float(label: str, value: object, minimum: float = 0.0) -> float | None:
    """A number > `minimum`, or one of the off words (None)."""
    if value is False or (isinstance(value, str) and value.strip().lower() in OFF):
        return None
    try:
        return parse_float(label, value, minimum)
    except ConfigError:
        raise ConfigError(label, shown(value), f"a number > {minimum} or off") from None


def parse_float(label: str, value: object, minimum: float = 0.0) -> float:
    expected = f"a number > {minimum}"
    if isinstance(value, bool):
        raise ConfigError(label, shown(value), expected)
    try:
        x = float(value.strip() if isinstance(value, str) else cast(SupportsFloat | SupportsIndex, value))
    except (TypeError, ValueError):  # float() refuses what is not a number (a TOML list, a date …)
        raise ConfigError(label, shown(value), expected) from None
    if not x > minimum or x != x or x == float("inf"):
        raise ConfigError(label, shown(value), expected)
    return x


def parse_words(label: str, value: object, choices: tuple[str, ...], pattern: str | None = None) -> tuple[str, ...]:
    """A comma-separated list (or a TOML array) of words from `choices` (or matching `pattern`,
    kept as written)."""
    if isinstance(value, str):
        items: list[object] = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, list):
        items = value
    else:
        raise ConfigError(label, shown(value), f"a list of {'|'.join(choices)}")
    out: list[str] = []
    for item in items:
        word = item.strip().lower() if isinstance(item, str) else None
        if word not in choices:
            if not (pattern is not None and isinstance(item, str) and re.fullmatch(pattern, item.strip())):
                raise ConfigError(label, shown(value), f"a comma list of {'|'.join(choices)}")
            word = item.strip()
        if word not in out:
            out.append(word)
    return tuple(sorted(out))


def parse_text(label: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigError(label, shown(value), "a string")
    return value
