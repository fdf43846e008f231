"""Sync's typed refusals through a real daemon carry only the data rpc_schema declares for their
kind: a path remote's locked ref (sync_rejected, `reason: "locked"`, `url`), a path remote whose
files cannot be read (sync_bad_remote_data, `reason: "unreadable"`, `url`), no such repository
(sync_unreachable, `url`). Each error's data validates against its kind's definition with every
key declared, so a client generated from the schema knows every field it is sent."""

import copy
import os
import subprocess

import jsonschema
import pytest

from sessiondag import ROOT, Call
from sessiondag.core.settings import Settings
from sessiondag.rpc import schema as rpc_schema
from sessiondag.store import SessionStore
from sessiondag.sync import push as sync_push, remotes
from sessiondag_client import connect_unix
from sessiondag_client.wire.errors import ERROR_CLASSES

pytestmark = pytest.mark.anyio

RemoteRejectedError = ERROR_CLASSES["sync_rejected"]
RemoteUnreachableError = ERROR_CLASSES["sync_unreachable"]
RemoteDataError = ERROR_CLASSES["sync_bad_remote_data"]


def _declared_only(data: dict) -> list[str]:
    """What is wrong with `data` against its kind's definition, undeclared keys included."""
    definition = rpc_schema.load()["errors"].get(data.get("kind"))
    if definition is None:
        return [f"kind {data.get('kind')!r} is not in rpc_schema"]
    strict = copy.deepcopy(definition["data"])
    strict["additionalProperties"] = False
    strict.pop("x-parent", None)
    return [f"{data['kind']}: {e.message}" for e in jsonschema.Draft202012Validator(strict).iter_errors(data)]


def _bare(path: str) -> str:
    subprocess.run(["git", "init", "-q", "--bare", path], check=True)
    return path


async def test_sync_errors_carry_only_the_data_the_schema_declares(socket_daemon, workdir, tmp_path, check):
    repo = _bare(str(tmp_path / "sessions.git"))
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open("s-1", working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "one", "predecessor": "ROOT"})
        await c.commit(h.id)
        assert (await c.push(h.id, repo))["status"] == "pushed"

        await c.append(h.id, {"role": "user", "name": "a", "output": "two", "predecessor": u.id})
        await c.commit(h.id)
        lock = os.path.join(repo, "refs", "sessiondag", "s-1", "summary.lock")
        open(lock, "wb").close()                        # a writer that crashed mid-push left it
        with pytest.raises(RemoteRejectedError) as rejected:
            await c.push(h.id, repo)
        os.unlink(lock)
        assert rejected.value.rpc_data["reason"] == "locked" and rejected.value.rpc_data["url"] == repo

        with pytest.raises(RemoteUnreachableError) as unreachable:
            await c.pull("s-2", str(tmp_path / "nowhere.git"), working_dir=str(workdir))
        assert unreachable.value.rpc_data["url"] == str(tmp_path / "nowhere.git")

        broken = _bare(str(tmp_path / "broken.git"))
        laptop = SessionStore(str(tmp_path / "laptop"))   # another machine pushed s-3; the daemon clones it
        laptop.open_session("s-3", working_dir=None)
        laptop.session("s-3").append(Call("user", "b", output="three", predecessor=ROOT))
        laptop.session("s-3").commit_turn()
        assert sync_push.push(laptop, remotes.resolve(laptop.state_dir, broken), "s-3", Settings())["status"] == "pushed"
        laptop.close()
        subprocess.run(["git", "-C", broken, "repack", "-adq"], check=True)
        pack_dir = os.path.join(broken, "objects", "pack")
        pack = next(n for n in os.listdir(pack_dir) if n.endswith(".pack"))
        os.unlink(os.path.join(pack_dir, pack))
        os.mkdir(os.path.join(pack_dir, pack))          # its index names it; what is there cannot be read
        with pytest.raises(RemoteDataError) as unreadable:
            await c.pull("s-3", broken, working_dir=str(workdir))
        assert unreadable.value.rpc_data["reason"] == "unreadable"

        for e in (rejected.value, unreachable.value, unreadable.value):
            assert _declared_only(e.rpc_data) == []
    finally:
        await c.aclose()
