"""Settings: defaults < config file < environment < flags, in real `sessiondag` processes; a bad value
fails loudly naming where it came from; `sessiondag config` shows each value's source."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from sessiondag.core.errors import ConfigError
from sessiondag.core.settings import SPECS, Settings, merge
from sessiondag.core.settings_source import SettingsSource

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]
CLEARED = {v for s in SPECS for v in s.env} | {"SESSIONDAG_CONFIG", "XDG_CONFIG_HOME"}


def clean_env(tmp_path, **extra):
    e = {k: v for k, v in os.environ.items() if k not in CLEARED}
    e["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    e["SESSIONDAG_HOME"] = str(tmp_path / "state")
    e.update({k: str(v) for k, v in extra.items()})
    return e


def sd(args, env, cwd=None):
    return subprocess.run(CLI + [str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def write_config(tmp_path, text):
    d = tmp_path / "xdg-config" / "sessiondag"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(text)
    return str(d / "config.toml")


def config_json(env, *flags):
    r = sd([*flags, "config", "--json"], env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    return {s["name"]: s for s in out["settings"]}, out


@pytest.mark.process
def test_each_layer_beats_the_one_below(tmp_path):
    # defaults
    got, out = config_json(clean_env(tmp_path))
    assert got["store.node_spill"]["value"] == 32768 and got["store.node_spill"]["source"] == "default"
    assert out["config_file_read"] is False
    # the config file beats the default
    path = write_config(tmp_path, "[store]\nnode_spill = 1000\n[rendering]\ntool_aging_tail_turns = 7\n")
    got, out = config_json(clean_env(tmp_path))
    assert out["config_file"] == path and out["config_file_read"] is True
    assert (got["store.node_spill"]["value"], got["store.node_spill"]["source"],
            got["store.node_spill"]["origin"]) == (1000, "file", path)
    # the environment beats the file (only where it is set)
    got, _ = config_json(clean_env(tmp_path, SESSIONDAG_NODE_SPILL="500"))
    assert (got["store.node_spill"]["value"], got["store.node_spill"]["origin"]) == (500, "SESSIONDAG_NODE_SPILL")
    assert (got["rendering.tool_aging_tail_turns"]["value"], got["rendering.tool_aging_tail_turns"]["source"]) == \
        (7, "file")
    # a flag beats the environment
    got, _ = config_json(clean_env(tmp_path, SESSIONDAG_NODE_SPILL="500"), "-c", "store.node_spill=off")
    assert (got["store.node_spill"]["value"], got["store.node_spill"]["source"],
            got["store.node_spill"]["origin"]) == (None, "flag", "-c store.node_spill")
    # --state-dir is a flag too
    got, _ = config_json(clean_env(tmp_path), "--set", f"state_dir={tmp_path / 'flagged'}")
    assert got["store.state_dir"]["value"] == str(tmp_path / "flagged")
    r = sd(["config", "--json", "--state-dir", tmp_path / "other"], clean_env(tmp_path))
    st_dir = {s["name"]: s for s in json.loads(r.stdout)["settings"]}["store.state_dir"]
    assert (st_dir["value"], st_dir["source"], st_dir["origin"]) == (str(tmp_path / "other"), "flag", "--state-dir")


def _spilled_user_messages(state):
    """Whether each session's first user message was stored as a blob (read back through the library)."""
    from sessiondag.store import SessionStore
    store = SessionStore(state)
    try:
        out = []
        for h in store.list_sessions():
            s = store.session(h["session_id"])
            user = next(c for c in s.get_branch() if c.role == "user")
            out.append(isinstance(user.output, dict) and "$blob" in user.output)
        return out
    finally:
        store.close()


@pytest.mark.parametrize("layers,spilled", [
    ({}, False),                                             # default 32 KiB: a 2 KB message stays inline
    ({"file": 1000}, True),
    ({"file": 1000, "env": "off"}, False),
    ({"file": 1000, "env": "off", "flag": "100"}, True),
    ({"env": "100", "flag": "off"}, False),
])
@pytest.mark.process
def test_the_winning_layer_is_what_a_run_writes(tmp_path, layers, spilled):
    """Not only what `config` says: a real run writes by the layer that wins."""
    if "file" in layers:
        write_config(tmp_path, f"[store]\nnode_spill = {layers['file']}\n")
    env = clean_env(tmp_path, **({"SESSIONDAG_NODE_SPILL": layers["env"]} if "env" in layers else {}))
    flags = ["-c", f"node_spill={layers['flag']}"] if "flag" in layers else []
    work = tmp_path / "work"
    work.mkdir()
    r = sd([*flags, "run", "m" * 2000, "--json"], env, cwd=work)
    assert r.returncode == 0, r.stderr
    assert _spilled_user_messages(tmp_path / "state") == [spilled]


BAD_SOURCES = [
    ("file", "[store]\nnode_spill = \"10k\"\n", {}, [], "config.toml: store.node_spill", "10k"),
    ("file-type", "[rendering]\ntool_aging = 3\n", {}, [], "config.toml: rendering.tool_aging", "3"),
    ("file-key", "[store]\nspill = 1\n", {}, [], "config.toml: store.spill", "node_spill"),
    ("file-section", "[stores]\nnode_spill = 1\n", {}, [], "config.toml: [stores]", "providers"),
    ("file-state-dir", "[store]\nstate_dir = \"/x\"\n", {}, [], "config.toml: store.state_dir", "$SESSIONDAG_HOME) or --state-dir"),
    ("file-toml", "[store\n", {}, [], "config.toml", "TOML"),
    ("env", "", {"SESSIONDAG_TOOL_AGING_TAIL_TURNS": "many"}, [], "SESSIONDAG_TOOL_AGING_TAIL_TURNS", "many"),
    ("env-allow", "", {"SESSIONDAG_ALLOW": "write,everything"}, [], "SESSIONDAG_ALLOW", "everything"),
    ("env-hidden", "", {"SESSIONDAG_NODE_SPILL": "huge"}, ["-c", "node_spill=10"], "SESSIONDAG_NODE_SPILL", "huge"),
    ("flag", "", {}, ["-c", "store.pack_compression=11"], "-c store.pack_compression", "11"),
    ("flag-name", "", {}, ["-c", "store.nothing=1"], "store.nothing", "store.node_spill"),
    ("flag-form", "", {}, ["-c", "node_spill"], "-c node_spill", "NAME=VALUE"),
]


@pytest.mark.parametrize("case,text,env,flags,named,shown", BAD_SOURCES, ids=[b[0] for b in BAD_SOURCES])
@pytest.mark.parametrize("command", [["config"], ["sessions", "list"]])
@pytest.mark.process
def test_a_bad_value_stops_the_command_naming_its_source(tmp_path, case, text, env, flags, named, shown, command):
    if text:
        write_config(tmp_path, text)
    r = sd([*flags, *command], clean_env(tmp_path, **env))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert named in r.stderr and shown in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.process
def test_config_text_names_every_setting_and_its_source(tmp_path):
    path = write_config(tmp_path, '[rendering]\nexpose_default = "full"\n'
                                  '[providers.work]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
                                  'api_key_env = "WORK_KEY"\n'
                                  f'[working_dirs]\nremap = {{ "/old/repo" = "{tmp_path}/new" }}\n')
    env = clean_env(tmp_path, SESSIONDAG_TOOL_AGING="off", OPENAI_API_KEY="sk-very-secret", WORK_KEY="sk-work-secret")
    r = sd(["-c", "agent.allow=write", "config"], env)
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln and not ln.startswith(("config file", "providers.",
                                                                                             "working_dirs."))}
    assert set(lines) == {s.name for s in SPECS}
    assert r.stdout.splitlines()[0] == f"config file: {path}"
    assert lines["rendering.expose_default"].split()[1:] == ["full", "file", path]
    assert lines["rendering.tool_aging"].split()[1:] == ["off", "env", "SESSIONDAG_TOOL_AGING"]
    assert lines["agent.allow"].split()[1:] == ["write", "flag", "-c", "agent.allow"]
    assert lines["store.node_spill"].split()[1:] == ["32768", "default"]
    assert lines["agent.openai_api_key"].split()[1:] == ["<set>", "env", "OPENAI_API_KEY"]
    assert "providers.work: kind=openai base_url=http://127.0.0.1:9/v1" in r.stdout
    assert f"working_dirs.remap: /old/repo -> {tmp_path}/new" in r.stdout
    assert "secret" not in r.stdout
    j = sd(["config", "--json"], env)
    assert j.returncode == 0 and "secret" not in j.stdout
    out = json.loads(j.stdout)
    assert out["providers"] == {"work": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}}
    assert out["working_dirs"] == {"remap": {"/old/repo": f"{tmp_path}/new"}}
    assert [s["name"] for s in out["settings"]] == [s.name for s in SPECS]


def test_a_source_resolves_anew_at_each_call(tmp_path, monkeypatch):
    """A SettingsSource reads the file and the environment when it is called (by an entry point,
    once: tests/test_settings_edge.py holds that nothing else calls it)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("SESSIONDAG_CONFIG", raising=False)
    monkeypatch.delenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", raising=False)
    source = SettingsSource()
    assert source().tool_aging_max_result_chars == 2000
    write_config(tmp_path, "[rendering]\ntool_aging_max_result_chars = 10\n")
    assert source().tool_aging_max_result_chars == 10                 # the file changed: read again
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "20")
    assert source().tool_aging_max_result_chars == 20
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "lots")
    with pytest.raises(ConfigError, match="SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS"):
        source()


LAYER = st.one_of(st.none(), st.integers(1, 10**6))


@hsettings(max_examples=200, deadline=None)
@given(file=LAYER, env=LAYER, flag=LAYER)
def test_merge_takes_the_highest_layer_that_sets_a_value(file, env, flag):
    s = merge(environ={"SESSIONDAG_NODE_SPILL": str(env)} if env is not None else {},
              file={"store": {"node_spill": file}} if file is not None else None, file_path="/c.toml",
              flags={"store.node_spill": str(flag)} if flag is not None else None)
    want = next((v for v in (flag, env, file) if v is not None), Settings().node_spill)
    kind = next((k for k, v in (("flag", flag), ("env", env), ("file", file)) if v is not None), "default")
    assert s.node_spill == want and s.source("node_spill").kind == kind


def test_store_context_and_runtime_do_not_read_the_environment():
    """They receive settings; only core/settings_source.py reads the file and the environment."""
    import ast
    from source_tree import modules
    allowed = {os.path.join("runtime", "subprocess_body.py"),   # hands the environment on to a child process
               os.path.join("workspace", "sandbox_exec.py")}    # sets a sandboxed child's TMPDIR
    found = []
    for m in modules():
        if m.rel.split(os.sep)[0] not in ("store", "context", "runtime", "workspace") or m.rel in allowed:
            continue
        for node in ast.walk(m.tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                found.append(f"{m.rel}:{node.lineno}")
    assert found == []


def test_the_beneath_resolver_is_a_setting_its_builders_pass_down(tmp_path):
    """workspace.beneath ($SESSIONDAG_BENEATH) reaches every Beneath: the file tools', a snapshot's."""
    from sessiondag.runtime import Runtime
    from sessiondag.runtime.file_tools import beneath
    from sessiondag.runtime.providers.scripted import ScriptedProvider
    from sessiondag.runtime.tools import ToolContext
    from sessiondag.workspace.checkpointer import limits_of
    from sessiondag.workspace.openat2 import openat2_available
    walk = merge(environ={"SESSIONDAG_BENEATH": "walk"})
    assert walk.beneath == "walk" and walk.source("beneath").kind == "env"
    assert merge(environ={}, flags={"workspace.beneath": "openat2"}).beneath == "openat2"
    with pytest.raises(ConfigError) as e:
        merge(environ={"SESSIONDAG_BENEATH": "fast"})
    assert "SESSIONDAG_BENEATH" in str(e.value)
    assert openat2_available()   # this machine's kernel has it (FACTS.md), so "auto" below means openat2
    for settings, fast in ((walk, False), (merge(environ={}), True)):
        with beneath(ToolContext(str(tmp_path), Runtime(ScriptedProvider(), config=settings))) as b:
            assert b.use_openat2 is fast
        assert limits_of(settings).resolver == settings.beneath
