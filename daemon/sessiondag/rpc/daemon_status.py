"""`daemon/status`: the daemon core's own figures plus what the serving process and the agent layer
know — the socket and log file, the turns running now, the provider/model a prompt gets by default."""

from __future__ import annotations

from typing import Any


def status(daemon: Any) -> dict[str, Any]:
    out = daemon.status()
    out.update(socket=getattr(daemon, "socket_path", None), log_path=getattr(daemon, "log_path", None),
               running_turns=daemon.agents.running_turns(), defaults=daemon.agents.provider_defaults())
    return out
