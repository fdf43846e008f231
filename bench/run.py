"""Run every benchmark section and print its table: `make bench` (or `python bench/run.py --quick`)."""

from __future__ import annotations

import importlib.util
import os
import sys

SECTIONS = ["store_bench", "render_bench", "rpc_bench", "big_session_bench", "usage_bench", "replay_bench",
            "sync_bench", "checkpoint_bench"]


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    only = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    for name in only or SECTIONS:
        path = os.path.join(here, f"{name}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"\n=== {name} ===", flush=True)
        mod.main(flags)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
