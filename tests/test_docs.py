"""The docs stay true to the tree: every path, module name, variable, state-dir file and make target
they cite exists, docs/settings.md's table gives each setting's variables and default as the code
has them, and core does no I/O but the one reader docs/architecture.md names (tests/docs_tidy.py).
The module map's completeness is in tests/test_layers.py, which every change runs."""

import docs_tidy


def test_cited_paths_exist():
    assert docs_tidy.stale_paths() == []


def test_cited_module_names_resolve():
    assert docs_tidy.stale_names() == []


def test_cited_variables_are_read_somewhere():
    assert docs_tidy.stale_variables() == []


def test_cited_state_dir_files_are_the_codes():
    """`<state>/daemon.log` and the like: the names the code uses (docs/protocol.md's log path)."""
    assert docs_tidy.stale_state_files() == []


def test_cited_make_targets_exist():
    assert docs_tidy.stale_make_targets() == []


def test_core_does_no_io_but_its_one_reader():
    """docs/architecture.md: core/ does no I/O except settings_source.py (the config file, the environment)."""
    assert docs_tidy.core_io() == []


def test_the_settings_table_is_the_codes():
    """docs/settings.md's table: each setting's variables and default are core/settings.py's."""
    assert docs_tidy.stale_settings_table() == []


def test_the_checks_see_a_stale_citation(tmp_path, monkeypatch):
    """Each checker finds what it is for: a doc citing a missing file, module, variable and target."""
    doc = tmp_path / "stale.md"
    variable = "SESSIONDAG_" + "NO_SUCH_SWITCH"   # spelled apart: this file is code the checker reads
    doc.write_text(f"See store/nothing_here.py, `sessiondag.store.no_such_module`, {variable} "
                   "and `make no-such-target`; tests/nowhere/test_x.py; <state>/no-such.log.\n")
    monkeypatch.setattr(docs_tidy, "DOCS", [str(doc)])
    rel = lambda pairs: sorted(w for _, w in pairs)  # noqa: E731
    assert rel(docs_tidy.stale_paths()) == ["store/nothing_here.py", "tests/nowhere/test_x.py"]
    assert rel(docs_tidy.stale_names()) == ["sessiondag.store.no_such_module"]
    assert rel(docs_tidy.stale_variables()) == [variable]
    assert rel(docs_tidy.stale_make_targets()) == ["no-such-target"]
    assert rel(docs_tidy.stale_state_files()) == ["no-such.log"]


def test_the_settings_check_sees_a_stale_row(tmp_path, monkeypatch):
    """A wrong default, a wrong variable, a row for no setting and a setting with no row are each found."""
    with open(docs_tidy.SETTINGS_DOC, encoding="utf-8") as f:
        text = f.read()
    text = (text.replace("| `store.node_spill` | `SESSIONDAG_NODE_SPILL` | 32768 |",
                         "| `store.node_spill` | `SESSIONDAG_NODE_SPILL` | 65536 |")
            .replace("| `rendering.tool_aging` | `SESSIONDAG_TOOL_AGING` | on |",
                     "| `rendering.tool_aging` | `SESSIONDAG_TOOL_AGING` | off |")
            .replace("`SESSIONDAG_PACK_COMPRESSION`", "`SESSIONDAG_PACK_LEVEL`")
            .replace("| `agent.sandbox_via` |", "| `agent.sandbox_how` |"))
    doc = tmp_path / "settings.md"
    doc.write_text(text)
    monkeypatch.setattr(docs_tidy, "SETTINGS_DOC", str(doc))
    assert sorted(w for _, w in docs_tidy.stale_settings_table()) == [
        "agent.sandbox_how: no such setting", "agent.sandbox_via: no row",
        "rendering.tool_aging: default off, the code's True", "store.node_spill: default 65536, the code's 32768",
        "store.pack_compression: variables `SESSIONDAG_PACK_LEVEL`, the code's SESSIONDAG_PACK_COMPRESSION"]
