"""Session config options (`session/set_config_option`): the model, category `model_config`.

One select option, id `model`: `default` (what the daemon gives a prompt naming none: its
$SESSIONDAG_PROVIDER / model) and each provider profile of the daemon's settings file
(`[providers.NAME]`: a provider kind, model and endpoint). Choosing one records it as the session's
provider (`session/open {provider, model}` -> the session meta `agent_settings`), so every later
turn of the session — from any client — uses it, and each llm node records the provider and model
it ran with. The current value is what this connection chose, else `default`."""

from __future__ import annotations

from typing import Any

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from .errors import invalid

OPTION = "model"


async def _defaults(agent: Any) -> dict[str, Any]:
    return (await agent.call("daemon/status", {})).get("defaults") or {}


async def options(agent: Any, st: Any) -> list[SessionConfigOptionSelect]:
    d = await _defaults(agent)
    default = f"daemon default ({d.get('provider')}{' ' + d['model'] if d.get('model') else ''})"
    values = [SessionConfigSelectOption(value="default", name=default)]
    values += [SessionConfigSelectOption(value=p, name=p, description="provider profile of the settings file")
               for p in d.get("profiles") or ()]
    return [SessionConfigOptionSelect(type="select", id=OPTION, name="Model", category="model_config",
                                      description="The provider and model of this session's turns",
                                      current_value=st.model_choice, options=values)]


async def choose(agent: Any, st: Any, config_id: str, value: Any) -> None:
    if config_id != OPTION:
        raise invalid(f"no config option {config_id!r} (this agent has {OPTION!r})", field="configId")
    d = await _defaults(agent)
    if value != "default" and value not in (d.get("profiles") or ()):
        raise invalid(f"no model choice {value!r}", field="value")
    settings = {"provider": d.get("provider"), **({"model": d["model"]} if d.get("model") else {})} \
        if value == "default" else {"provider": value}
    # resume first: session/open would create a session deleted meanwhile again, under its old id
    await agent.call("session/resume", {"session_id": st.sid, "working_dir": st.cwd})
    await agent.call("session/open", {"session_id": st.sid, "working_dir": st.cwd, **settings})
    st.model_choice = value
