"""Run every benchmark section and print its table: `make bench` (or `python bench/run.py --quick`)."""

from __future__ import annotations

import importlib.util
import os
import sys

SECTIONS = ["store_bench", "render_bench", "rpc_bench", "big_session_bench", "usage_bench", "replay_bench",
            "sync_bench", "checkpoint_bench", "issue21"]
VALUED = ("--before", "--before-rev", "--rounds")  # flags followed by a value (issue21.py)


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    only, flags = [], []
    args = iter(argv)
    for a in args:
        if a in VALUED:
            flags += [a, next(args)]
        elif a.startswith("-"):
            flags.append(a)
        else:
            only.append(a)
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
