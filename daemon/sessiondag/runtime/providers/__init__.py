"""Model providers: `scripted` (deterministic, offline) and `openai` (any OpenAI-compatible endpoint).

A provider turns rendered OpenAI-format messages + tool specs into one `Completion`, streaming text
deltas through `on_text` as they arrive. `config()` returns a JSON-able dict from which
`make_provider` rebuilds an equivalent provider (used by subprocess bodies).
"""

from __future__ import annotations

import os
from typing import Any

from .base import Completion, Provider, ProviderError, ToolCall


def make_provider(config: dict[str, Any] | None = None) -> Provider:
    cfg = dict(config or {})
    kind = cfg.pop("provider", None) or "scripted"
    if kind == "scripted":
        from .scripted import ScriptedProvider
        return ScriptedProvider(**cfg)
    if kind == "openai":
        from .openai_compat import OpenAICompatProvider
        return OpenAICompatProvider(**cfg)
    raise ProviderError(f"unknown provider {kind!r}; expected 'scripted' or 'openai'")


def provider_from_env(kind: str | None = None, *, script: str | None = None,
                      model: str | None = None) -> Provider:
    """The provider named by `kind` or $SESSIONDAG_PROVIDER (default: scripted).

    scripted: script from `script` or $SESSIONDAG_SCRIPT (none: the built-in reply).
    openai: base URL from $SESSIONDAG_OPENAI_BASE_URL or $OPENAI_BASE_URL, key from
    $SESSIONDAG_OPENAI_API_KEY or $OPENAI_API_KEY, model from `model` or $SESSIONDAG_MODEL."""
    kind = kind or os.environ.get("SESSIONDAG_PROVIDER") or "scripted"
    model = model or os.environ.get("SESSIONDAG_MODEL")
    if kind == "scripted":
        cfg: dict[str, Any] = {"provider": "scripted", "script": script or os.environ.get("SESSIONDAG_SCRIPT")}
        if model:
            cfg["model"] = model
        return make_provider(cfg)
    if kind == "openai":
        cfg = {"provider": "openai",
               "base_url": os.environ.get("SESSIONDAG_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
               "api_key": os.environ.get("SESSIONDAG_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")}
        if not cfg["base_url"] and not cfg["api_key"]:
            raise ProviderError("the openai provider needs an endpoint: set OPENAI_BASE_URL (or "
                                "SESSIONDAG_OPENAI_BASE_URL) and/or OPENAI_API_KEY")
        if model:
            cfg["model"] = model
        return make_provider(cfg)
    raise ProviderError(f"unknown provider {kind!r}; expected 'scripted' or 'openai'")


__all__ = ["Completion", "Provider", "ProviderError", "ToolCall", "make_provider", "provider_from_env"]
