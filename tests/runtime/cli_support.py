"""Run `sessiondag …` as a real subprocess with an isolated SESSIONDAG_HOME."""

import os
import subprocess
import sys

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


def run_cli(args, *, home, cwd=None, env=None, input=None, timeout=120):
    e = dict(os.environ)
    e["SESSIONDAG_HOME"] = str(home)
    e.pop("SESSIONDAG_PROVIDER", None)
    e.pop("SESSIONDAG_SCRIPT", None)
    e.update(env or {})
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, env=e, input=input, capture_output=True,
                          text=True, timeout=timeout)
