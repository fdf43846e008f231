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
    from ..runtime.providers.settings import ProviderError, config_path, load_settings
    path = config_path()
    try:
        data = load_settings(path)
    except ProviderError as e:
        raise UsageError(str(e)) from None
    table = (data.get("working_dirs") or {}).get("remap") or {}
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise UsageError(f"settings file {path}: [working_dirs] remap must map paths to paths")
    return {os.path.normpath(k): os.path.normpath(v) for k, v in table.items()}


def remapped(recorded: str | None, wanted: str) -> bool:
    """Whether a remap rule turns the recorded working dir into `wanted`."""
    if not recorded:
        return False
    for old, new in remaps().items():
        if recorded == old or recorded.startswith(old + os.sep):
            if os.path.normpath(new + recorded[len(old):]) == wanted:
                return True
    return False
