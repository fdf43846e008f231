"""Path remapping for sessions resumed from another checkout (a CI runner whose path differs):

    # $XDG_CONFIG_HOME/sessiondag/config.toml (or $SESSIONDAG_CONFIG)
    [working_dirs]
    remap = { "/builds/runner-1/repo" = "/builds/runner-7/repo" }

A session recorded under a remapped prefix may be resumed from the mapped dir without
--allow-working-dir-mismatch; the move is recorded as a rebind like the flag's, never implicit."""

from __future__ import annotations

import os

from .common import UsageError


def remaps() -> dict[str, str]:
    """The settings' working_dir_remap (checked when the settings are read: core/settings.py)."""
    from ..core.errors import ConfigError
    from ..core.settings_source import current
    try:
        return dict(current().working_dir_remap)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def remapped(recorded: str | None, wanted: str) -> bool:
    """Whether a remap rule turns the recorded working dir into `wanted`."""
    if not recorded:
        return False
    for old, new in remaps().items():
        if recorded == old or recorded.startswith(old + os.sep):
            if os.path.normpath(new + recorded[len(old):]) == wanted:
                return True
    return False
