"""Rendering policy switches, read from the environment at call time (no reimport needed).

- SESSIONDAG_TOOL_AGING              on|off (default on): truncate old tool results in rendering
- SESSIONDAG_TOOL_AGING_TAIL_TURNS   int (default 4): turns kept whole behind the aging boundary
- SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS int (default 2000): length an aged result is cut to
- SESSIONDAG_NODE_SPILL              off | bytes (see spill.py)
- SESSIONDAG_EXPOSE_DEFAULT          io|full|none (default io): what an unspecified `expose` means
"""

from __future__ import annotations

import os

from ..core.errors import InvalidNodeError

POLICY_VERSION = 1
EXPOSE_VALUES = ("io", "full", "none")
DEFAULT_TAIL_TURNS = 4
DEFAULT_MAX_RESULT_CHARS = 2000


def _int_env(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidNodeError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidNodeError(f"{name} must be >= {minimum}, got {value}")
    return value


def aging_enabled() -> bool:
    return os.environ.get("SESSIONDAG_TOOL_AGING", "").strip().lower() not in ("0", "off", "false", "no")


def tail_turns() -> int:
    return _int_env("SESSIONDAG_TOOL_AGING_TAIL_TURNS", DEFAULT_TAIL_TURNS, 0)


def max_result_chars() -> int:
    return _int_env("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", DEFAULT_MAX_RESULT_CHARS, 0)


def expose_default() -> str:
    raw = os.environ.get("SESSIONDAG_EXPOSE_DEFAULT", "").strip().lower() or "io"
    if raw not in EXPOSE_VALUES:
        raise InvalidNodeError(f"SESSIONDAG_EXPOSE_DEFAULT must be one of {EXPOSE_VALUES}, got {raw!r}")
    return raw
