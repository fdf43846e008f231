"""core/mcp_config.py: the `mcpServers` shape checked, and the names MCP tools get."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from sessiondag.core.errors import ConfigError
from sessiondag.core.mcp_config import function_name, function_name_of, node_name, parse_servers

server_names = st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)


@given(server_names, st.text(min_size=1, max_size=200))
def test_function_names_are_what_providers_accept_and_map_back(server, tool):
    fn = function_name(server, tool)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", fn)
    assert function_name_of(node_name(server, tool)) == fn
    assert node_name(server, tool) == f"mcp:{server}/{tool}"


@given(st.text(max_size=40).filter(lambda s: not s.startswith("mcp:")))
def test_other_tool_names_render_as_they_are(name):
    assert function_name_of(name) == name


def test_the_three_transports_and_disabled_entries():
    got = parse_servers({"mcpServers": {
        "a": {"command": "srv", "args": ["-x"], "env": {"K": "V"}, "cwd": "sub"},
        "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"H": "v"}},
        "c": {"type": "sse", "url": "https://example.invalid/sse"},
        "d": {"command": "x", "disabled": True}}}, "f.json")
    assert [(s.name, s.transport) for s in got.values()] == [("a", "stdio"), ("b", "http"), ("c", "sse")]
    assert got["a"].public()["env"] == ["K"] and "V" not in str(got["a"].public())
    assert parse_servers({n: s.to_config() for n, s in got.items()}, "again") == \
        {n: type(s)(**{**s.__dict__, "origin": "again"}) for n, s in got.items()}


@pytest.mark.parametrize("entry, where", [
    ({"type": "carrier-pigeon"}, "mcpServers.x"),
    ({"command": ""}, "mcpServers.x"),
    ({"command": "a", "args": "not a list"}, "mcpServers.x"),
    ({"command": "a", "env": {"K": 1}}, "mcpServers.x"),
    ({"type": "http", "url": "file:///etc/passwd"}, "mcpServers.x"),
    ({"type": "http", "url": "http://h/", "headers": ["x"]}, "mcpServers.x"),
    ("a string", "mcpServers.x"),
])
def test_bad_entries_are_config_errors_naming_the_entry(entry, where):
    with pytest.raises(ConfigError) as e:
        parse_servers({"x": entry}, "f.json")
    assert e.value.variable == f"f.json: {where}"


def test_bad_names_and_shapes():
    with pytest.raises(ConfigError):
        parse_servers({"bad name!": {"command": "a"}}, "f")
    with pytest.raises(ConfigError):
        parse_servers(["a"], "f")
    with pytest.raises(ConfigError):
        parse_servers({f"s{i}": {"command": "a"} for i in range(65)}, "f")


def test_settings_take_mcp_allow_words_and_server_tables():
    from sessiondag.core.settings import merge
    from sessiondag.runtime.permissions import allow_policy
    s = merge(environ={"SESSIONDAG_ALLOW": "write, mcp:fs, mcp:gh/create_issue"},
              file={"mcp_servers": {"fs": {"command": "srv", "args": ["."]}}}, file_path="/c.toml")
    assert s.allow == ("mcp:fs", "mcp:gh/create_issue", "write")
    assert s.mcp_servers["fs"].command == "srv" and s.mcp_servers["fs"].origin == "/c.toml"
    policy = allow_policy(set(s.allow))
    assert policy("mcp", {"tool": "mcp:fs/read"}) and policy("mcp", {"tool": "mcp:gh/create_issue"})
    assert not policy("mcp", {"tool": "mcp:gh/delete_repo"}) and not policy("run", {})
    assert allow_policy({"mcp"})("mcp", {"tool": "mcp:any/thing"})
    for bad in ("mcp:", "mcp:bad name", "fs"):
        with pytest.raises(ConfigError):
            merge(environ={"SESSIONDAG_ALLOW": bad})
    with pytest.raises(ConfigError) as e:
        merge(environ={}, file={"mcp_servers": {"x": {"url": "nope"}}}, file_path="/c.toml")
    assert e.value.variable == "/c.toml: mcpServers.x"
