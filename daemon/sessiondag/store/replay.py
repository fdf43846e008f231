"""Journal records read back from disk are hostile until checked: the checks a replay applies
before a record joins the graph, and what a session remembers of the first record it refused.

A record another process wrote (or a restored, planted or damaged file holds) passes the same
structural rules as a snapshot load (`Graph.check_replayed`, `Graph.from_snapshot`): a known kind
with fields of the right types, a new node id, a seq after every earlier one, a caller and a
predecessor that already exist (so every edge points to an older node and no walk can cycle), an
update, checkout or name of a node that exists. Values are not re-checked for depth: older
journals may hold what was accepted then (docs/storage.md "What a node may hold").

The first record refused stops the replay: what is before it stays readable, nothing after it is
applied, and every write of the session is refused with `CorruptJournalError` naming the record's
byte offset (so nothing is acknowledged that a later open could not read back, and no commit
launders the damage into git). The damage stays on disk for a person to look at.
"""

from __future__ import annotations

from dataclasses import dataclass
from ..core.errors import InvalidNodeError, NotFoundError
from ..core.graph import Graph
from ..core.model import ROOT, UPDATABLE, Call, call_from_record
from .journal import CorruptJournalError


@dataclass(frozen=True)
class Damage:
    offset: int          # byte offset of the first refused record in journal.log
    reason: str

    def error(self, session_id: str) -> CorruptJournalError:
        return CorruptJournalError(
            f"session {session_id!r}: journal.log is damaged at byte {self.offset} ({self.reason}); "
            f"the session reads up to there and takes no more writes")


def _str(value: object) -> bool:
    return type(value) is str and bool(value)


def checked(g: Graph | None, r: object) -> Call | None:
    """Check one record read from disk against the graph it would extend; returns the node of an
    append record (None for the other kinds). Raises InvalidNodeError (with the reason)."""
    if type(r) is not dict:
        raise InvalidNodeError("a record that is not an object")
    try:
        if "a" in r:
            if type(r["a"]) is not dict:
                raise InvalidNodeError("an append record without a node")
            c = call_from_record(r["a"])
            if g is None:
                if c.id != ROOT:
                    raise InvalidNodeError("the journal does not start with ROOT")
                return c
            g.check_replayed(c)
            if r.get("v") is not None and not _str(r["v"]):
                raise InvalidNodeError("a branch name that is not a string")
            return c
        if g is None:
            raise InvalidNodeError("the journal does not start with ROOT")
        if "u" in r:
            f = r["f"]
            if r["u"] == ROOT or type(f) is not dict or set(f) - UPDATABLE \
                    or ("metadata" in f and type(f["metadata"]) is not dict) \
                    or ("status" in f and type(f["status"]) is not str):
                raise InvalidNodeError("a malformed update record")
            g.get(r["u"])
        elif "c" in r:
            g.check_checkout(r["c"])
        elif "n" in r:
            g.check_name(r["n"], r["v"])
        elif "m" in r:
            if not _str(r["m"]) or "v" not in r:
                raise InvalidNodeError("a malformed meta record")
        else:
            raise InvalidNodeError(f"an unknown record kind {sorted(r)[:4]}")
    except NotFoundError as e:
        raise InvalidNodeError(f"a record about a node that does not exist ({e})") from None
    except (KeyError, TypeError, AttributeError) as e:
        raise InvalidNodeError(f"a malformed record ({type(e).__name__}: {e})") from None
    return None
