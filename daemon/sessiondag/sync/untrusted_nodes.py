"""A remote snapshot's node records as nodes, in bulk: exactly what `Call.from_dict` of each would
give, or its error.

A clone builds every node of the session (10,000 and more) from records that are hostile until
checked. `Call.from_dict` per record pays for its generality (a set of the keys, a dict of the
arguments, the constructor's keyword defaults, `validate_fields` behind it). Here one tight pass
holds the same rules (the fields known, role and name present, the types and values
`validate_fields` requires, seq an integer and created_at a number, booleans refused as both, the
same defaults for absent or null fields) and builds each accepted record as the store builds its
own (`call_from_record`). A record this pass does not accept goes to `Call.from_dict`, which
raises the error it always raised: the rules are its, the fast path only agrees with them
(tests/sync/test_untrusted_nodes.py, hypothesis: the same node or the same error).
"""

from __future__ import annotations

from typing import Any

from ..core.model import FIELDS, ROLES, ROOT, STATUSES, Call, call_from_record

_KNOWN = frozenset(FIELDS)


def calls_of(records: list[Any]) -> list[Call]:
    """`[Call.from_dict(d) for d in records]`, in bulk (the same nodes, the same first error)."""
    out: list[Call] = []
    known, roles, statuses = _KNOWN, ROLES, STATUSES
    for d in records:
        if type(d) is not dict or not known.issuperset(d):
            out.append(Call.from_dict(d))
            continue
        g = d.get
        status = g("status", "completed")
        caller = g("caller") or ROOT      # absent or null: ROOT ("" is refused below, by from_dict)
        pred = g("predecessor")
        reads = g("reads")
        md = g("metadata")
        nid = g("id")
        seq = g("seq", -1)
        ts = g("created_at", 0.0)
        role = g("role")
        if (type(role) is str and role in roles and type(g("name")) is str
                and type(status) is str and status in statuses
                and type(caller) is str and (pred is None or (type(pred) is str and pred))
                and (reads is None or (type(reads) is list and all(type(r) is str for r in reads)))
                and (md is None or type(md) is dict)
                and type(nid) is str and 0 < len(nid) <= 128
                and type(seq) is int and type(ts) in (int, float)
                and ("caller" not in d or d["caller"] is None or d["caller"] == caller)):
            out.append(call_from_record({
                "id": nid, "seq": seq, "created_at": ts, "role": role, "name": d["name"],
                "status": status, "caller": caller, "predecessor": pred, "input": g("input"),
                "output": g("output"), "reads": [] if reads is None else reads,
                "metadata": {} if md is None else md}))
        else:
            out.append(Call.from_dict(d))
    return out
