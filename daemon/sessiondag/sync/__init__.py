"""Sessions across machines through any git remote (docs/sync.md).

Above store/, below rpc/ and cli/: layout (the ref namespace one remote repository holds for many
sessions), remotes (named remotes of a state dir), transport (dulwich's clients, credentials, typed
transport errors), identity (a working dir's project identity), summary (what `sync list` reads
without bodies), checks (secrets, object sizes), push, fetch (objects of a remote session into a
quarantine), merge (the union of divergent histories), pull (clone / fast-forward / merge applied
to a local session), retention (what `gc` may delete).
"""
