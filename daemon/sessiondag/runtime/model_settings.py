"""The model a session runs on: its provider (a kind or a settings-file profile), model and options,
recorded at the session's first turn and at every explicit model change, used by every later turn
through any entry point unless that prompt overrides them.

The record is the session meta `agent_settings` (committed with the turn, so `git log` shows when the
model changed) and a copy in session.json for people and other tools. It holds names and numbers
only — {provider, model, temperature?, max_tokens?, script?} — never a key: a later turn resolves the
provider name again where it runs (the CLI in its own shell, the daemon for editors), so a key comes
from that process's environment or settings file each time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store.session import Session
    from .providers.base import Provider

META_KEY = "agent_settings"
KEYS = ("provider", "model", "temperature", "max_tokens", "script")


def recorded(session: Session) -> dict[str, Any]:
    """The session's recorded settings ({} before its first turn, or for a record that is not an
    object: data read from disk is checked, a bad record is ignored rather than trusted)."""
    got = session.graph.extra.get(META_KEY)
    if not isinstance(got, dict):
        return {}
    return {k: v for k, v in got.items() if k in KEYS and isinstance(v, (str, int, float)) and not isinstance(v, bool)}


def merge(base: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`given` over `base`; naming another provider drops the base's model and options (they were
    that provider's)."""
    given = {k: v for k, v in given.items() if k in KEYS and v is not None}
    if given.get("provider") not in (None, base.get("provider")):
        return given
    return {**base, **given}


def describe(name: str | None, provider: Provider) -> dict[str, Any]:
    """What to record for `provider`, built from the settings named `name` (a kind or a profile)."""
    out: dict[str, Any] = {"provider": name or getattr(provider, "name", "scripted"), "model": provider.model}
    for k in ("temperature", "max_tokens"):
        if getattr(provider, k, None) is not None:
            out[k] = getattr(provider, k)
    src = getattr(provider, "_source", None)
    if isinstance(src, str):
        out["script"] = src
    return out


def record(session: Session, settings: dict[str, Any] | None) -> bool:
    """Make `settings` the session's model (meta + session.json). False if it already was.
    The caller holds the session's lock."""
    settings = {k: v for k, v in (settings or {}).items() if k in KEYS and v is not None}
    if not settings or recorded(session) == settings:
        return False
    session.set_meta(META_KEY, settings)
    session.update_info(agent_settings=settings)
    return True


def record_first(session: Session, settings: dict[str, Any] | None) -> bool:
    """At a turn: record `settings` if the session has none yet (its first turn)."""
    if not settings or recorded(session):
        return False
    return record(session, settings)

