"""What a module of the adapter needs to ask the daemon something: `call(method, params)`.

The SessiondagAgent (agent.py) is one; a module below it names this Protocol (or agent_api.py's,
which extends it) instead of the agent, which imports it (a cycle). A call's result is the
method's result in rpc_schema/: the caller names it with the generated wire type
(`sessiondag_client.wire.protocol`, e.g. `r: wp.SessionListBranchesResult = await agent.call(…)`),
as the Python client's own methods do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class DaemonCalls(Protocol):
    async def call(self, method: str, params: Mapping[str, object]) -> Any:
        """The daemon's answer to `method` (its result's type is the method's: see above)."""
        ...
