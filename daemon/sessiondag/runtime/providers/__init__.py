"""Model providers: `scripted` (deterministic, offline) and `openai` (any OpenAI-compatible endpoint).

A provider turns rendered OpenAI-format messages + tool specs into one `Completion`, streaming text
deltas through `on_text` as they arrive. `config()` returns a JSON-able dict from which
`make_provider` rebuilds an equivalent provider (used by subprocess bodies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.settings import Settings
from ...core.settings_source import current as current_settings
from .anthropic_native import AnthropicProvider
from .base import Completion, Provider, ProviderError, ToolCall
from .openai_compat import OpenAICompatProvider
from .scripted import ScriptedProvider
from .settings import resolve


def make_provider(config: Mapping[str, Any] | None = None) -> Provider:
    cfg = dict(config or {})
    kind = cfg.pop("provider", None) or "scripted"
    if kind == "scripted":
        return ScriptedProvider(**cfg)
    if kind == "openai":
        return OpenAICompatProvider(**cfg)
    if kind == "anthropic":
        return AnthropicProvider(**cfg)
    raise ProviderError(f"unknown provider {kind!r}; expected 'scripted', 'openai' or 'anthropic'")


def provider_for(name: str | None = None, *, model: str | None = None, script: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 settings: Settings | None = None) -> Provider:
    """The provider named `name` — a profile of the settings file (see settings.py) or a built-in kind
    (scripted | openai) configured from the environment — default $SESSIONDAG_PROVIDER or scripted.
    `model` (default: the profile's, else $SESSIONDAG_MODEL) and the generation settings override.
    `script` is for the scripted provider only; giving it to another is refused. `settings`: the
    caller's, resolved at its entry point (default: the process's, resolved now)."""
    settings = settings if settings is not None else current_settings()
    name = name or settings.provider
    cfg = resolve(name, settings)
    if script is not None:
        if cfg["provider"] != "scripted":
            raise ProviderError(f"a script is for the scripted provider, not {name!r}")
        cfg["script"] = script
    model = model or cfg.get("model") or settings.model
    if model:
        cfg["model"] = model
    for k, v in (("temperature", temperature), ("max_tokens", max_tokens)):
        if v is not None:
            cfg[k] = v
    return make_provider(cfg)


def provider_from_env(kind: str | None = None, *, script: str | None = None,
                      model: str | None = None, settings: Settings | None = None) -> Provider:
    """The provider named by `kind` or $SESSIONDAG_PROVIDER (default: scripted); see provider_for.

    scripted: script from `script` or $SESSIONDAG_SCRIPT (none: the built-in reply).
    openai: base URL from $SESSIONDAG_OPENAI_BASE_URL or $OPENAI_BASE_URL, key from
    $SESSIONDAG_OPENAI_API_KEY or $OPENAI_API_KEY, model from `model` or $SESSIONDAG_MODEL."""
    return provider_for(kind, script=script, model=model, settings=settings)


__all__ = ["Completion", "Provider", "ProviderError", "ToolCall", "make_provider", "provider_for",
           "provider_from_env"]
