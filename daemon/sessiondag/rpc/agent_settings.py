"""Per-session and per-prompt model settings: provider (a kind or a settings-file profile), model,
temperature, max_tokens (and, for the scripted provider, a script path).

`session/open` {…, provider?, model?, temperature?, max_tokens?} records them as the session meta
`agent_settings` (the session's defaults); `agent/prompt` takes the same keys for one turn. A prompt
uses: its own keys, else the session's, else the daemon's environment. The provider and model used
are recorded on every llm node (metadata `provider`, `gen_ai.request.model`, and the generation
settings as `gen_ai.request.temperature` / `gen_ai.request.max_tokens`)."""

from __future__ import annotations

from typing import Any

from ..runtime.providers import ProviderError, provider_for
from .registry import InvalidParams

META_KEY = "agent_settings"
SETTINGS = ("provider", "model", "temperature", "max_tokens", "script")


def pick(params: dict[str, Any]) -> dict[str, Any]:
    """Split the model settings off `params` (in place; checked against rpc_schema/ already)."""
    return {k: params.pop(k) for k in SETTINGS if params.get(k) is not None}


def build(settings: dict[str, Any]) -> Any:
    """The provider for these settings (InvalidParams when they do not make one)."""
    try:
        return provider_for(settings.get("provider"), model=settings.get("model"), script=settings.get("script"),
                            temperature=settings.get("temperature"), max_tokens=settings.get("max_tokens"))
    except ProviderError as e:
        raise InvalidParams(str(e)) from None


async def check(ctx: Any, settings: dict[str, Any]) -> None:
    """Refuse settings that do not make a provider (before anything is opened or written)."""
    await ctx.daemon.run_blocking(build, settings)


async def record(ctx: Any, session_id: str, settings: dict[str, Any]) -> None:
    """Make `settings` the session's defaults (after `check`)."""
    s = await ctx.daemon.get_session(session_id)
    await ctx.daemon.submit_write(s, lambda: s.set_meta(META_KEY, settings))


async def for_prompt(ctx: Any, session: Any, settings: dict[str, Any], default: Any) -> Any:
    """The provider of one prompt: its settings over the session's over the daemon's default."""
    stored = await ctx.daemon.run_session(session, lambda: session.graph.extra.get(META_KEY))
    merged = {**(stored if isinstance(stored, dict) else {}), **settings}
    if not merged:
        return await ctx.daemon.run_blocking(default)
    return await ctx.daemon.run_blocking(build, merged)
