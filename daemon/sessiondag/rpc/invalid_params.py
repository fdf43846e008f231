"""InvalidParams: params that do not fit the method (JSON-RPC -32602). Below the method table so
that the parts of the daemon that check params (agent_mcp.py, params.py) need nothing above them."""

from __future__ import annotations

from ..core.errors import SessionDagError


class InvalidParams(SessionDagError, ValueError):
    """Params that do not fit the method (JSON-RPC -32602); `param` names the offending one."""

    code = "invalid_params"

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param

    def data(self) -> dict[str, object]:
        return {} if self.param is None else {"param": self.param}
