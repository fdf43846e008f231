"""Issue 21's table: every row of the issue, this tree beside the previous commit of main, measured
in the same run (`make bench` prints it; so does `python bench/run.py issue21`).

    python bench/issue21.py [--quick] [--rounds N] [--before DIR | --before-rev REV]

`--before DIR`: a checkout to compare with (its daemon/ and clients/python/ are put first on the
path of the child processes that measure it). Default: `git archive` of REV (default `HEAD^`, the
previous commit of main) into a temp dir; without git history, no before column.

The write-path rows come from bench/write_rows.py (`write_rows(before_dir)`), the read-path rows
from bench/read_rows.py (`read_rows(before_dir, rounds, quick)`), both as dicts
{"path", "before", "now", "goal", "met"} (met: True, False or None when the row has no goal).
A part whose module is not there yet is printed as "(pending)", never as a figure.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

READ_PATHS = ["render_bench, 100k-node branch, cold", "render_bench, 10k-node branch, cold",
              "render_messages as the runtime calls it, 100k, cold", "the same, replies called by their user node",
              "render whole branch over RPC, cold, 100k",
              "get_branch 100k over RPC + the Python client's decode", "first render after open, 100k, over RPC"]


def checkout(rev: str) -> str | None:
    """`git archive` of `rev` of this repository into a temp dir, or None without git history."""
    try:
        sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", rev + "^{commit}"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    out = tempfile.mkdtemp(prefix=f"sd-before-{sha[:8]}-")
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", out], stdin=archive.stdout, check=True)
    archive.wait()
    print(f"before = {rev} ({sha[:10]}) in {out}", file=sys.stderr, flush=True)
    return out


def part(module: str, func: str, before: str | None, **kw) -> list[dict] | None:
    """The rows of `module.func(before)`, None when the module is not there yet."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        return None
    return getattr(mod, func)(before, **kw)


def table(rows: list[dict], before_label: str) -> str:
    w = max(len(r["path"]) for r in rows)
    lines = [f"{'path':<{w}}  {before_label:>22}  {'now':>22}  {'goal':>8}  met",
             f"{'-' * w}  {'-' * 22}  {'-' * 22}  {'-' * 8}  ---"]
    for r in rows:
        met = {True: "yes", False: "NO", None: ""}[r.get("met")]
        lines.append(f"{r['path']:<{w}}  {r.get('before', ''):>22}  {r.get('now', ''):>22}  {r.get('goal', ''):>8}  {met}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else (1 if quick else 3)
    if "--before" in argv:
        before, label = argv[argv.index("--before") + 1], "before"
    else:
        rev = argv[argv.index("--before-rev") + 1] if "--before-rev" in argv else "HEAD^"
        before, label = checkout(rev), f"before ({rev})"
    load = os.getloadavg()
    try:
        rows = part("write_rows", "write_rows", before, rounds=rounds, quick=quick)
        reads = part("read_rows", "read_rows", before, rounds=rounds, quick=quick)
    finally:
        if before is not None and "--before" not in argv:
            shutil.rmtree(before, ignore_errors=True)
    if reads is None:
        reads = [{"path": p, "before": "", "now": "(pending)", "goal": "", "met": None} for p in READ_PATHS]
    rows = (rows or []) + reads
    print(f"\nissue 21: this tree vs {before or 'nothing (no git history)'}; medians of {rounds} interleaved "
          f"round(s){' (quick)' if quick else ''}; load average at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(table(rows, label))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
