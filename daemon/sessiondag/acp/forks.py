"""`session/fork`: an ACP fork is a real branch of the same sessiondag session.

The fork's ACP id is `<session id>~<fork point>~<tag>` (`~` is never part of a session or node id):
its prompts continue its own tip — at first the fork point (the tip of the session it was forked
from), then the head of its last turn, which is named `acp-fork-<tag>` after every turn (a branch's
name follows it as it grows), so a load or resume after any restart finds the fork's tip again. A
fork that never prompted resumes at its fork point.

The daemon's HEAD stays with the session it was forked from: a fork's turn runs as a fork from its
tip (`agent/prompt {branch_from}`, which makes the new branch current), and HEAD is put back where it
was afterwards — also when the fork started at HEAD, so the session's next prompt forks there and
does not continue the fork's branch. The original ACP session (and every other client following
HEAD) goes on where it was. Forks are not in `session/list` (they are branches:
`_sessiondag/list_branches` shows them by name)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .daemon_calls import DaemonCalls
from .errors import unknown_session

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

SEP = "~"
PART = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


@dataclass
class Fork:
    sid: str            # the daemon's session
    point: str          # the node it was forked at
    tag: str
    tip: str            # where its next prompt continues

    @property
    def acp_id(self) -> str:
        return SEP.join((self.sid, self.point, self.tag))

    @property
    def name(self) -> str:
        return f"acp-fork-{self.tag}"


class Forkable(Protocol):
    """An ACP session as these functions see it (turns.SessionState: it holds a `Fork`)."""
    fork: Fork | None

    @property
    def sid(self) -> str: ...


def parse(acp_id: str) -> tuple[str, str, str] | None:
    """(session id, fork point, tag) of a fork's ACP id; None for a plain session id."""
    if SEP not in acp_id:
        return None
    parts = acp_id.split(SEP)
    if len(parts) != 3 or not all(PART.fullmatch(p) for p in parts):
        raise unknown_session(acp_id)
    return parts[0], parts[1], parts[2]


async def resolve(agent: DaemonCalls, acp_id: str) -> Fork:
    """A fork's state from the daemon: its named branch's head, else (never prompted) its point."""
    sid, point, tag = parse(acp_id)   # type: ignore[misc]
    fork = Fork(sid, point, tag, point)
    r: wp.SessionListBranchesResult = await agent.call("session/list_branches", {"session_id": sid})
    branches = r["branches"]
    named = next((b["head_id"] for b in branches if b.get("name") == fork.name), None)
    if named is not None:
        fork.tip = named
    else:
        await agent.call("session/get_node", {"session_id": sid, "node_id": point})   # -32002 when gone
    return fork


async def tip_of(agent: DaemonCalls, st: Forkable) -> str:
    """The node a fork of `st` starts at: a fork's tip, else the daemon's HEAD."""
    if st.fork is not None:
        return str(st.fork.tip)
    return str((await agent.call("session/list_branches", {"session_id": st.sid}))["head_id"])


def new(sid: str, point: str) -> Fork:
    return Fork(sid, point, secrets.token_hex(4), point)


async def before_turn(agent: DaemonCalls, st: Forkable) -> str | None:
    """The daemon's HEAD before a fork's turn (put back afterwards)."""
    if st.fork is None:
        return None
    return str((await agent.call("session/list_branches", {"session_id": st.sid}))["head_id"])


async def after_turn(agent: DaemonCalls, st: Forkable, head_before: str | None, head_id: str | None) -> None:
    """A fork's turn ended at `head_id`: that is its tip (named), and HEAD goes back where it was."""
    fork = st.fork
    if fork is None or not head_id or head_id == fork.tip:
        return
    fork.tip = head_id
    await agent.call("session/name_branch", {"session_id": fork.sid, "head_id": head_id, "name": fork.name})
    if head_before is not None:   # even when the fork started at HEAD: the session goes on from there
        await agent.call("session/checkout", {"session_id": fork.sid, "head_id": head_before})

