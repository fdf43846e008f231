"""The `sessiondag run` parent resolves the model, asks the user and shows progress; its private
`serve --stdio` child runs the turn. The parent does not import what only the child runs (the
agent loop, the model calls, the Runtime: runtime/__init__.py's names load on first use, PEP
562) nor yaml before a YAML file is read; the runtime package still exports every name, and a bare
`session_context()` still builds the default Runtime."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

ONLY_THE_CHILD_RUNS = ("sessiondag.runtime.runtime", "sessiondag.runtime.loop", "sessiondag.runtime.agentic",
                       "sessiondag.runtime.calls", "sessiondag.runtime.subprocess_body",
                       "sessiondag.runtime.subagents", "sessiondag.runtime.roles", "yaml")

PARENT = """import sys, orjson
out = sys.argv.pop(1)
from sessiondag.cli import main
try:
    code = main()
finally:
    with open(out, "wb") as f:
        f.write(orjson.dumps(sorted(sys.modules)))
sys.exit(code)
"""


def _python(code: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env or os.environ,
                         check=True)
    return out.stdout


def test_the_run_parent_does_not_import_what_only_its_child_runs(tmp_path):
    work, home, seen = tmp_path / "work", tmp_path / "home", tmp_path / "modules.json"
    work.mkdir()
    env = {**os.environ, "SESSIONDAG_HOME": str(home), "SESSIONDAG_PROVIDER": "scripted"}
    r = subprocess.run([sys.executable, "-c", PARENT, str(seen), "run", "hello", "--session", "s1", "--new",
                        "--private", "--workdir", str(work)], env=env, capture_output=True, text=True, cwd=work)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "hello" in r.stdout                            # the child ran the turn (the scripted echo)
    loaded = set(orjson.loads(seen.read_bytes()))
    assert "sessiondag.runtime.ask_user" in loaded         # what the parent uses is there
    assert sorted(m for m in ONLY_THE_CHILD_RUNS if m in loaded) == []


def test_the_runtime_package_still_exports_every_name_and_builds_the_default_runtime(tmp_path):
    env = {**os.environ, "SESSIONDAG_HOME": str(tmp_path / "home"), "SESSIONDAG_PROVIDER": "scripted"}
    got = orjson.loads(_python(
        "import sys, orjson, types\n"
        "import sessiondag.runtime as rt\n"
        "import sessiondag.runtime.ask_user\n"             # the module of the same name as the function
        "lazy = [m for m in ('sessiondag.runtime.loop', 'sessiondag.runtime.runtime') if m in sys.modules]\n"
        "from sessiondag.runtime import *\n"
        "names = {n: type(getattr(rt, n)).__name__ for n in rt.__all__}\n"
        f"with rt.session_context(working_dir={str(tmp_path)!r}) as ctx:\n"
        "    built = type(rt.current_runtime()).__name__\n"
        "print(orjson.dumps([lazy, names, built, callable(rt.ask_user), sorted(set(rt.__all__) - set(dir(rt)))]).decode())",
        env))
    lazy, names, built, ask_user_is_the_function, missing = got
    assert lazy == []
    assert set(names) >= {"Runtime", "run_task", "run_turn", "session_context", "agentic_function", "ask_user",
                          "Tool", "WORKSPACE_TOOLS", "TurnResult", "create_runtime"}
    assert names["ask_user"] == "function" and ask_user_is_the_function
    assert built == "Runtime" and missing == []
