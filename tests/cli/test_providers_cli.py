"""Models and providers: the native Anthropic provider against a real loopback server (streaming, tool
use, usage), retries with Retry-After, timeouts, extra headers, the no-usage warning, provider
profiles in the settings file, per-session and per-prompt provider/model over RPC, refused flags."""

import json

import pytest

from clitest_support import env_for, sd
from hanging_openai import LoopbackOpenAI
from loopback_http import send_json
from loopback_anthropic import LoopbackAnthropic
from sessiondag.store import SessionStore
from sessiondag_client import InvalidParamsError, SyncClient


def anthropic_env(home, srv, **extra):
    return {"SESSIONDAG_ANTHROPIC_BASE_URL": srv.base_url, "SESSIONDAG_ANTHROPIC_API_KEY": "sk-ant-test", **extra}


def key_of(request):
    """The API key as sent (x-api-key, or a bearer token: the SDK's choice)."""
    h = request["headers"]
    return h.get("x-api-key") or h.get("authorization") or ""


def llm_nodes(home, sid):
    return [c for c in SessionStore(home).session(sid).get_branch() if c.role == "llm"]


def test_anthropic_streams_tool_use_and_usage(home, workdir):
    (workdir / "notes.txt").write_text("todo\n")
    replies = [{"match": "look", "text": "Let me look.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}],
                "usage": {"input_tokens": 100, "output_tokens": 20}},
               {"text": "There is notes.txt.", "usage": {"input_tokens": 150, "output_tokens": 8}}]
    with LoopbackAnthropic(replies) as srv:
        r = sd(["run", "look around", "--provider", "anthropic", "--model", "claude-test", "--json"], home=home,
               cwd=workdir, env=anthropic_env(home, srv))
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        assert res["text"] == "There is notes.txt." and res["usage"] == {"input_tokens": 250, "output_tokens": 28}
        assert "Let me look." in r.stderr and "→ list_dir" in r.stderr
        first, second = srv.requests[0]["body"], srv.requests[1]["body"]
        assert "sk-ant-test" in key_of(srv.requests[0])
        assert first["model"] == "claude-test" and first["stream"] is True and "sessiondag agent" in first["system"]
        assert {t["name"] for t in first["tools"]} >= {"list_dir", "read_file"} and "input_schema" in first["tools"][0]
        # the tool result goes back as a tool_result block answering the tool_use block
        blocks = [b for m in second["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
        use = next(b for b in blocks if b["type"] == "tool_use")
        result = next(b for b in blocks if b["type"] == "tool_result")
        assert use["id"] == result["tool_use_id"] == "toolu_loop_0" and "notes.txt" in json.dumps(result)
    nodes = llm_nodes(home, res["session_id"])
    assert [n.metadata["provider"] for n in nodes] == ["anthropic", "anthropic"]
    assert nodes[0].metadata["gen_ai.usage.input_tokens"] == 100 and nodes[0].name == "claude-test"


def test_retries_honour_retry_after_then_give_up(home, workdir):
    with LoopbackAnthropic([{"text": "made it", "repeat": True}],
                           failures=[(429, {"retry-after-ms": "20"}), (503, {}), (529, {"retry-after": "0"})]) as srv:
        r = sd(["run", "x", "--provider", "anthropic", "--json"], home=home, cwd=workdir, env=anthropic_env(home, srv))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["text"] == "made it" and len(srv.requests) == 4   # 3 failures, then the reply
    with LoopbackAnthropic([{"text": "never"}], failures=[(500, {})] * 5) as srv:
        r = sd(["run", "x", "--provider", "anthropic", "--json"], home=home, cwd=workdir, env=anthropic_env(home, srv))
        res = json.loads(r.stdout)
        assert r.returncode == 1 and res["stop_reason"] == "error" and "500" in res["error"]["message"]
        assert len(srv.requests) == 4                                                  # 1 try + 3 retries


class FlakyOpenAI(LoopbackOpenAI):
    def __init__(self, replies, failures):
        super().__init__(replies)
        self.failures = list(failures)

    def stream(self, h, reply, body):
        if self.failures:
            return send_json(h, self.failures.pop(0), {"error": {"message": "busy", "type": "rate_limit"}},
                             {"retry-after-ms": "10"})
        super().stream(h, reply, body)


def test_openai_retries_too(home, workdir):
    with FlakyOpenAI([{"text": "ok now", "repeat": True}], [429, 502]) as srv:
        r = sd(["run", "x", "--provider", "openai", "--json"], home=home, cwd=workdir,
               env={"SESSIONDAG_OPENAI_BASE_URL": srv.base_url, "SESSIONDAG_OPENAI_API_KEY": "k"})
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["text"] == "ok now" and len(srv.requests) == 3


def test_profile_timeout_headers_key_command_and_no_usage_warning(home, workdir, tmp_path):
    with LoopbackAnthropic([{"tool_calls": [{"name": "list_dir", "arguments": {}}], "no_usage": True},
                            {"text": "listed", "no_usage": True}]) as srv, \
            LoopbackAnthropic([{"text": "late"}], hang_s=30) as slow:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'''
[providers.team]
kind = "anthropic"
base_url = "{srv.base_url}"
model = "claude-team"
api_key_command = "echo sk-from-command"
headers = {{ "X-Team" = "infra" }}
temperature = 0.25

[providers.slow]
kind = "anthropic"
base_url = "{slow.base_url}"
api_key_env = "SLOW_KEY"
timeout = 0.5
max_retries = 0
''')
        env = {"SESSIONDAG_CONFIG": cfg, "SLOW_KEY": "sk-slow"}
        r = sd(["run", "list it", "--provider", "team", "--json"], home=home, cwd=workdir, env=env)
        assert r.returncode == 0, r.stderr
        h = srv.requests[0]["headers"]
        assert "sk-from-command" in key_of(srv.requests[0]) and h["x-team"] == "infra"
        assert srv.requests[0]["body"]["model"] == "claude-team" and srv.requests[0]["body"]["temperature"] == 0.25
        assert r.stderr.count("sent no token usage") == 1          # two calls, one warning
        nodes = llm_nodes(home, json.loads(r.stdout)["session_id"])
        assert nodes[0].metadata["gen_ai.request.temperature"] == 0.25
        r = sd(["run", "x", "--provider", "slow", "--json"], home=home, cwd=workdir, env=env)
        res = json.loads(r.stdout)
        assert r.returncode == 1 and "Timeout" in res["error"]["type"] + res["error"]["message"]
        assert len(slow.requests) == 1
        r = sd(["run", "x", "--provider", "slow"], home=home, cwd=workdir, env={"SESSIONDAG_CONFIG": cfg})
        assert r.returncode == 2 and "$SLOW_KEY is not set" in r.stderr
        r = sd(["run", "x", "--provider", "nosuch"], home=home, cwd=workdir, env=env)
        assert r.returncode == 2 and "unknown provider 'nosuch'" in r.stderr and "team" in r.stderr


def test_per_session_and_per_prompt_models_over_rpc(home, workdir):
    with LoopbackAnthropic([{"text": "from claude", "repeat": True}]) as srv:
        env = env_for(home, **anthropic_env(home, srv))
        assert sd(["daemon", "start"], home=home, env=anthropic_env(home, srv)).returncode == 0
        with SyncClient.connect(state_dir=str(home)) as c:
            h = c.open(working_dir=str(workdir))
            r = c.agent_prompt(session_id=h.id, content="hi", provider="anthropic", model="claude-a",
                               temperature=0.5, max_tokens=99)
            assert r["text"] == "from claude"
            body = srv.requests[-1]["body"]
            assert (body["model"], body["temperature"], body["max_tokens"]) == ("claude-a", 0.5, 99)
            r = c.agent_prompt(session_id=h.id, content="and you?")   # the model the first turn recorded
            assert r["text"] == "from claude"
            body = srv.requests[-1]["body"]
            assert (body["model"], body["temperature"], body["max_tokens"]) == ("claude-a", 0.5, 99)
            r = c.agent_prompt(session_id=h.id, content="now you", provider="scripted")  # this prompt only
            assert "built-in scripted reply" in r["text"]
            r = c.agent_prompt(session_id=h.id, content="and again")
            assert r["text"] == "from claude"
            # a session's own defaults (session/open), used by prompts that name none
            h2 = c.call("session/open", {"working_dir": str(workdir), "provider": "anthropic", "model": "claude-b"})
            r = c.agent_prompt(session_id=h2["session_id"], content="hello")
            assert r["text"] == "from claude" and srv.requests[-1]["body"]["model"] == "claude-b"
            with pytest.raises(InvalidParamsError, match="script is for the scripted provider"):
                c.agent_prompt(session_id=h.id, content="x", provider="anthropic", script="/tmp/s.yaml")
            with pytest.raises(InvalidParamsError, match="temperature"):
                c.agent_prompt(session_id=h.id, content="x", temperature=7)
        del env
    nodes = llm_nodes(home, h.id)
    assert [(n.metadata["provider"], n.name) for n in nodes] == [
        ("anthropic", "claude-a"), ("anthropic", "claude-a"), ("scripted", "scripted"), ("anthropic", "claude-a")]
    assert nodes[0].metadata["gen_ai.request.max_tokens"] == 99 and nodes[0].metadata["gen_ai.request.temperature"] == 0.5
    assert llm_nodes(home, h2["session_id"])[0].name == "claude-b"


def test_inapplicable_flags_refused(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    r = sd(["run", "x", "--script", script, "--provider", "anthropic"], home=home, cwd=workdir,
           env={"SESSIONDAG_ANTHROPIC_API_KEY": "k"})
    assert r.returncode == 2 and "script is for the scripted provider" in r.stderr
    r = sd(["run", "x", "--temperature", "3"], home=home, cwd=workdir)
    assert r.returncode == 2 and "--temperature" in r.stderr
