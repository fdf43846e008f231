"""Rendering policy switches, read from the environment at call time (no reimport needed).
A value a switch does not take raises ConfigError naming the variable (core/switches.py).

- SESSIONDAG_TOOL_AGING              on|off (default on): truncate old tool results in rendering
- SESSIONDAG_TOOL_AGING_TAIL_TURNS   int (default 4): turns kept whole behind the aging boundary
- SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS int (default 2000): length an aged result is cut to
- SESSIONDAG_NODE_SPILL              off | bytes (see store/spill.py)
- SESSIONDAG_EXPOSE_DEFAULT          io|full|none (default io): what an unspecified `expose` means
"""

from __future__ import annotations

from ..core.switches import env_bool, env_choice, env_int
from ..store.journal import rotate_bytes
from ..store.packs import pack_compression
from ..store.spill import spill_threshold

POLICY_VERSION = 1
EXPOSE_VALUES = ("io", "full", "none")
DEFAULT_TAIL_TURNS = 4
DEFAULT_MAX_RESULT_CHARS = 2000


def aging_enabled() -> bool:
    return env_bool("SESSIONDAG_TOOL_AGING", True)


def tail_turns() -> int:
    return env_int("SESSIONDAG_TOOL_AGING_TAIL_TURNS", DEFAULT_TAIL_TURNS, 0)


def max_result_chars() -> int:
    return env_int("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", DEFAULT_MAX_RESULT_CHARS, 0)


def expose_default() -> str:
    return env_choice("SESSIONDAG_EXPOSE_DEFAULT", "io", EXPOSE_VALUES)


def check_environment() -> None:
    """Read every SESSIONDAG_… switch once: raises ConfigError naming the first bad one. The
    `sessiondag` command calls it before anything else, so a bad value stops it at start."""
    aging_enabled()
    tail_turns()
    max_result_chars()
    expose_default()
    spill_threshold()
    rotate_bytes()
    pack_compression()
