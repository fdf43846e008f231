"""Rendering policy constants. The switches themselves (tool aging on/off, its tail and cut length,
the default expose, the spill threshold) are settings (core/settings.py, docs/settings.md): a
renderer reads them from the session it renders (`session.settings()`: its store's, frozen).
"""

from __future__ import annotations

from ..core.settings import EXPOSE_VALUES

POLICY_VERSION = 1
__all__ = ["EXPOSE_VALUES", "POLICY_VERSION"]
