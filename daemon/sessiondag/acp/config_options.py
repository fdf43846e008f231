"""Session config options (`session/set_config_option`): the model, category `model_config`.

One select option, id `model`: `default` (what the daemon gives a prompt naming none: its
$SESSIONDAG_PROVIDER / model) and each provider profile of the daemon's settings file
(`[providers.NAME]`: a provider kind, model and endpoint). Choosing one records it as the session's
provider (`session/open {provider, model}` -> the session meta `agent_settings`), so every later
turn of the session — from any client — uses it, and each llm node records the provider and model
it ran with. The current value is what this connection chose, else `default`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from .agent_api import AgentApi
from .errors import invalid
from .turns import SessionState

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

OPTION = "model"


async def _defaults(agent: AgentApi) -> wp.DaemonStatusResultDefaults:
    r: wp.DaemonStatusResult = await agent.call("daemon/status", {})
    return r.get("defaults") or {}


async def options(agent: AgentApi, st: SessionState) -> list[SessionConfigOptionSelect]:
    d = await _defaults(agent)
    model = d.get("model")
    default = f"daemon default ({d.get('provider')}{' ' + model if model else ''})"
    values = [SessionConfigSelectOption(value="default", name=default)]
    values += [SessionConfigSelectOption(value=p, name=p, description="provider profile of the settings file")
               for p in d.get("profiles") or ()]
    return [SessionConfigOptionSelect(type="select", id=OPTION, name="Model", category="model_config",
                                      description="The provider and model of this session's turns",
                                      current_value=st.model_choice, options=values)]


async def choose(agent: AgentApi, st: SessionState, config_id: str, value: str | bool) -> None:
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
    st.model_choice = str(value)   # a str: "default" or a profile's name (checked above)
