"""The model a CLI turn runs on, resolved in this process (this shell's environment and settings
file), the same whether the turn then runs here or in the daemon: the flags over the session's
recorded settings (runtime/model_settings.py) over this shell's defaults.

Through a daemon the client sends the provider configuration it resolved (`provider_config`, with
the key the profile or environment gave it, used by the daemon in memory only) beside the names a
first turn records, so a daemon started from another shell, or by an editor, runs the same model.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from ..runtime.model_settings import describe, merge, recorded
from ..runtime.providers import provider_for

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

    from ..runtime.providers.base import Provider
    from ..store.handles import SessionStore


class ModelFlags(TypedDict, total=False):
    """The model a command line or `/model` asks for (runtime/model_settings.py KEYS): over the
    session's record, then this shell's defaults."""
    provider: str
    model: str
    temperature: float
    max_tokens: int
    script: str


class RunSettings(ModelFlags, total=False):
    """`sessiondag run`'s: the model flags and the --budget-* limits."""
    budget: wp.AgentPromptParamsBudget


def flags_of(args: argparse.Namespace) -> ModelFlags:
    """The --provider/--model/--temperature/--max-tokens/--script given (those left out are not keys)."""
    out: ModelFlags = {}
    put_flags(out, args)
    return out


def put_flags(out: ModelFlags, args: argparse.Namespace) -> None:
    """flags_of's keys into `out` (a ModelFlags, or a TypedDict that extends it)."""
    if args.provider is not None:
        out["provider"] = args.provider
    if args.model is not None:
        out["model"] = args.model
    if args.temperature is not None:
        out["temperature"] = args.temperature
    if args.max_tokens is not None:
        out["max_tokens"] = args.max_tokens
    if args.script:
        out["script"] = os.path.abspath(args.script)


@dataclass
class Model:
    provider: Provider          # the built provider
    settings: dict[str, object]  # the names a first turn records (no key)

    def wire(self) -> dict[str, object]:
        """agent/prompt params: the resolved configuration and the names beside it."""
        return {**self.settings, "provider_config": self.provider.config()}


def resolve_model(store: SessionStore, session_id: str | None, flags: ModelFlags) -> Model:
    """The flags over the session's record (none for a new session), resolved here.
    Raises ProviderError naming what this shell lacks."""
    base = recorded(store.session(session_id)) if session_id is not None and store.exists(session_id) else {}
    want = merge(base, dict(flags))
    settings = store.settings()  # the command's, resolved once at its start
    provider = provider_for(want.get("provider"), model=want.get("model"), script=want.get("script"),
                            temperature=want.get("temperature"), max_tokens=want.get("max_tokens"),
                            settings=settings)
    name = want.get("provider") or settings.provider
    return Model(provider, {**describe(name, provider), **{k: v for k, v in want.items() if k == "script"}})
