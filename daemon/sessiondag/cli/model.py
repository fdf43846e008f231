"""The model a CLI turn runs on, resolved in this process (this shell's environment and settings
file), the same whether the turn then runs here or in the daemon: the flags over the session's
recorded settings (runtime/model_settings.py) over this shell's defaults.

Through a daemon the client sends the provider configuration it resolved (`provider_config`, with
the key the profile or environment gave it, used by the daemon in memory only) beside the names a
first turn records, so a daemon started from another shell, or by an editor, runs the same model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..runtime.model_settings import describe, merge, recorded
from ..runtime.providers import provider_for

if TYPE_CHECKING:
    from ..runtime.providers.base import Provider
    from ..store.handles import SessionStore


@dataclass
class Model:
    provider: Provider          # the built provider
    settings: dict[str, Any]    # the names a first turn records (no key)

    def wire(self) -> dict[str, Any]:
        """agent/prompt params: the resolved configuration and the names beside it."""
        return {**self.settings, "provider_config": self.provider.config()}


def resolve_model(store: SessionStore, session_id: str | None, flags: dict[str, Any]) -> Model:
    """The flags over the session's record (none for a new session), resolved here.
    Raises ProviderError naming what this shell lacks."""
    base = recorded(store.session(session_id)) if session_id is not None and store.exists(session_id) else {}
    want = merge(base, flags)
    settings = store.settings()  # the command's, resolved once at its start
    provider = provider_for(want.get("provider"), model=want.get("model"), script=want.get("script"),
                            temperature=want.get("temperature"), max_tokens=want.get("max_tokens"),
                            settings=settings)
    name = want.get("provider") or settings.provider
    return Model(provider, {**describe(name, provider), **{k: v for k, v in want.items() if k == "script"}})
