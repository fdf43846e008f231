"""session/usage: the usage ledger of a session (context/ledger.py) over the wire.

`session/usage {session_id, by?: branch|node|subagent|model|turn, head_id?}` → {session_id, by,
head_id, rows, total}: the rows partition the scope (the whole session, or the branch ending at
`head_id` with every call made on its behalf) so that they add up to `total`. A read: it runs under
the session's mutex in a worker thread, and the ledger is kept up to date by the store's events.
"""

from __future__ import annotations

from ..context.ledger import session_usage
from . import handler_types as ht
from .registry import RequestContext, method


@method("session/usage")
async def session_usage_method(ctx: RequestContext, params: ht.SessionUsageParams) -> dict[str, object]:
    p = params
    sid = p["session_id"]
    s = await ctx.service.get(sid)

    def work() -> dict[str, object]:
        return {"session_id": sid, **session_usage(s, p["by"] or "branch", p["head_id"])}
    return await ctx.service.run(s, work)
