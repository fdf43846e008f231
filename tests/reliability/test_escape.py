"""The escape campaign (issue 19, items 1-2) against the file tools themselves: a thread exchanges
`wd/sub` with a symlink to an outside dir while read_file("sub/secret") and write_file("sub/x") run,
with each resolver of workspace/beneath.py. A few hundred attempts in the normal suite, 5,000 per
resolver with SESSIONDAG_SLOW=1. Escapes and hangs must be 0; docs/reliability.md has the figures."""

import pytest

from campaign_escape import campaign
from campaign_support import rounds

from sessiondag.runtime import Runtime, allow_policy
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import ToolContext, read_file, write_file


def _ctx(wd):
    return ToolContext(wd, Runtime(ScriptedProvider(), permissions=allow_policy({"write"})))


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_escape_campaign_against_the_file_tools(tmp_path, monkeypatch, resolver, capsys):
    monkeypatch.setenv("SESSIONDAG_BENEATH", resolver)
    r = campaign(str(tmp_path), lambda wd, rel: read_file(_ctx(wd), rel),
                 lambda wd, rel: write_file(_ctx(wd), rel, "pwned"), rounds(150, 5000))
    with capsys.disabled():
        print(f"\nescape ({resolver}): " + ", ".join(f"{k}={v}" for k, v in r.items()))
    assert r["escapes"] == 0 and r["hangs"] == 0, r
    assert r["ok"] > 0 and r["refused"] > 0, r
