"""Feedback while a turn runs (issue 26, item 5): each retry is announced with its reason; a plain
JSON answer to a streaming request is named as what it is."""

import json

from clitest_support import sd
from hanging_openai import LoopbackOpenAI
from loopback_http import send_json


class Failing500(LoopbackOpenAI):
    def __init__(self, replies, failures):
        super().__init__(replies)
        self.failures = failures

    def stream(self, h, reply, body):
        if self.failures:
            self.failures -= 1
            return send_json(h, 500, {"error": {"message": "upstream exploded", "type": "server_error"}},
                             {"retry-after-ms": "10"})
        super().stream(h, reply, body)


class PlainJson(LoopbackOpenAI):
    def stream(self, h, reply, body):  # ignores "stream": true
        self.plain(h, reply)


def openai_env(srv):
    return {"SESSIONDAG_OPENAI_BASE_URL": srv.base_url, "SESSIONDAG_OPENAI_API_KEY": "k"}


def test_each_retry_is_announced_with_its_reason(home, workdir):
    with Failing500([{"text": "finally", "repeat": True}], failures=2) as srv:
        r = sd(["run", "x", "--provider", "openai"], home=home, cwd=workdir, env=openai_env(srv))
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("retrying in")]
    assert len(lines) == 2 and all("500" in line and "upstream exploded" in line for line in lines), r.stderr
    assert "(attempt 1)" in lines[0] and "(attempt 2)" in lines[1]


def test_a_plain_json_answer_to_a_stream_is_named(home, workdir):
    with PlainJson([{"text": "not streamed", "repeat": True}]) as srv:
        r = sd(["run", "x", "--provider", "openai", "--json"], home=home, cwd=workdir, env=openai_env(srv))
    res = json.loads(r.stdout)
    assert r.returncode == 1 and "truncated" not in res["error"]["message"]
    assert "plain application/json body instead of server-sent events" in res["error"]["message"]
