"""Path remapping for sessions resumed from another checkout (a CI runner whose path differs):

    # $XDG_CONFIG_HOME/sessiondag/config.toml (or $SESSIONDAG_CONFIG)
    [working_dirs]
    remap = { "/builds/runner-1/repo" = "/builds/runner-7/repo" }

A session recorded under a remapped prefix may be resumed from the mapped dir without
--allow-working-dir-mismatch; the move is recorded as a rebind like the flag's, never implicit."""

from __future__ import annotations

import os

from ..core.settings import Settings


def remapped(recorded: str | None, wanted: str, settings: Settings) -> bool:
    """Whether a remap rule of the settings' working_dir_remap (checked when they were resolved:
    core/settings.py) turns the recorded working dir into `wanted`."""
    if not recorded:
        return False
    for old, new in settings.working_dir_remap.items():
        if recorded == old or recorded.startswith(old + os.sep):
            if os.path.normpath(new + recorded[len(old):]) == wanted:
                return True
    return False
