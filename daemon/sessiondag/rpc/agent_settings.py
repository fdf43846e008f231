"""Per-session and per-prompt model settings: provider (a kind or a settings-file profile), model,
temperature, max_tokens (and, for the scripted provider, a script path).

A session records them at its first turn (runtime/model_settings.py: the session meta
`agent_settings` and session.json); `session/open` {…, provider?, model?, …} changes the record (a
model change: the chat's `/model`). `agent/prompt` takes the same keys for one turn. A prompt uses:

- `provider_config` when the client sent one: the provider the client resolved in its own
  environment and settings file (`sessiondag run`, `sessiondag chat`), so one command gives one model
  with or without a daemon. It may carry an API key: the key is used for this prompt's calls, kept in
  memory only (never recorded, never logged; the record is the names the client sent beside it);
- else its own keys over the session's record, resolved in the daemon's environment (editors);
- else the daemon's default ($SESSIONDAG_PROVIDER and its settings).

Other than the daemon's default (kept: a scripted provider's script is consumed across the prompts
that use it), a provider is built for its prompt. A configuration that does not make a provider is `invalid_params` naming the
process that lacks what. The provider and model used are recorded on every llm node."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..core.settings import Settings
from ..runtime.model_settings import describe, merge, recorded
from ..runtime.model_settings import record as record_settings
from ..runtime.providers import Provider, ProviderError, make_provider, provider_for
from ..store.session import Session
from .registry import InvalidParams, RequestContext

if TYPE_CHECKING:   # the client's wire types: a `serve` child never loads them
    from sessiondag_client.wire.protocol import AgentPromptParamsProviderConfig

SETTINGS = ("provider", "model", "temperature", "max_tokens", "script")

# The model settings (SETTINGS' keys) are runtime/model_settings.py's `dict[str, Any]`: the record
# it merges and stores, each value of the type its key says (provider, model, script: str …).
ModelSettings = dict[str, Any]


def pick(params: Mapping[str, object]) -> ModelSettings:
    """Split the model settings off `params` (in place; checked against rpc_schema/ already)."""
    given = cast("dict[str, object]", params)   # a method's checked params: rpc/params.py's Params, a dict
    return {k: given.pop(k) for k in SETTINGS if given.get(k) is not None}


def _here(e: Exception) -> InvalidParams:
    return InvalidParams(f"in the daemon's environment (pid {os.getpid()}): {e}")


def build(settings: ModelSettings, config: Settings) -> Provider:
    """The provider for these settings over the daemon's `config`, resolved here (InvalidParams when
    they do not make one)."""
    try:
        return provider_for(settings.get("provider"), model=settings.get("model"), script=settings.get("script"),
                            temperature=settings.get("temperature"), max_tokens=settings.get("max_tokens"),
                            settings=config)
    except ProviderError as e:
        raise _here(e) from None


def _from_config(config: AgentPromptParamsProviderConfig) -> Provider:
    try:
        return make_provider(config)
    except ProviderError as e:
        raise InvalidParams(f"provider_config: {e}") from None
    except (TypeError, ValueError) as e:  # a key the provider does not take: names it, not a value
        raise InvalidParams(f"provider_config does not make a provider: {type(e).__name__}") from None


async def check(ctx: RequestContext, settings: ModelSettings) -> None:
    """Refuse settings that do not make a provider (before anything is opened or written)."""
    await ctx.service.blocking(build, settings, ctx.service.settings)


async def record(ctx: RequestContext, session_id: str, settings: ModelSettings) -> None:
    """A model change: `settings` over the session's record (after `check`)."""
    s = await ctx.service.get(session_id)
    await ctx.service.submit(s, lambda: record_settings(s, merge(recorded(s), settings)))


async def for_prompt(ctx: RequestContext, session: Session, settings: ModelSettings,
                     config: AgentPromptParamsProviderConfig | None) -> tuple[Provider, ModelSettings]:
    """(provider, what a first turn records) for one prompt; see the module doc."""
    d = ctx.service
    if config is not None:  # built for this prompt, as the same command in-process builds it
        provider = await d.blocking(_from_config, config)
        return provider, {**describe(config.get("provider"), provider), **settings}
    stored = await d.run(session, recorded, session)
    merged = merge(stored, settings)
    default: Provider | None
    if not merged:
        default = await d.blocking(d.agents.default_provider)
        return default, describe(d.settings.provider, default)
    try:
        default = await d.blocking(d.agents.default_provider)
    except ProviderError:  # this daemon has no default of its own: the record decides alone
        default = None
    if default is not None and merged == describe(d.settings.provider, default):
        return default, merged  # the daemon's own provider, kept: a script goes on across prompts
    provider = await d.blocking(build, merged, d.settings)
    return provider, describe(merged.get("provider"), provider)
