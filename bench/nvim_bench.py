"""Neovim plugin benchmark (editors/nvim) in a real headless Neovim 0.11.4 against a real daemon.

    python bench/nvim_bench.py [--quick]

1. plugin load time: `nvim --startuptime`, the sourcing of plugin/sessiondag.lua (what every Neovim
   start pays), compared with Neovim's own bundled plugins sourced in the same runs (target < 1 ms);
2. `:Sessiondag` to a populated chat buffer for a 2,000-node session (cold: connect + session/open +
   subscribe + view; warm: reload), target < 200 ms;
3. streaming overhead per text delta in the plugin (model update + buffer redraw of the streaming row,
   on that 2,000-node chat), target < 5 ms median; the floor is one nvim_buf_set_lines call.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "editors" / "nvim"
BIN = Path(sys.executable).parent
NVIM = str(BIN / "nvim")

BENCH_LUA = r"""
local uv = vim.uv
local out = {}
local chat = require("sessiondag.chat")
local session = require("sessiondag.session")
require("sessiondag").setup({ layout = "tab", auto_start = false })
local expected = tonumber(vim.env.SD_BENCH_ROWS)
local function populated()
  return chat.buf and vim.api.nvim_buf_is_valid(chat.buf) and #chat.model.rows == expected
     and vim.api.nvim_buf_line_count(chat.buf) > expected
end
local t0 = uv.hrtime()
vim.cmd("Sessiondag")
assert(vim.wait(30000, populated, 1), "chat not populated")
out.cold_ms = (uv.hrtime() - t0) / 1e6
out.lines = vim.api.nvim_buf_line_count(chat.buf)
out.warm_ms = {}
for _ = 1, tonumber(vim.env.SD_BENCH_REPS) do
  local done = false
  local t = uv.hrtime()
  require("sessiondag.client").run(function() chat.load(); done = true end)
  assert(vim.wait(30000, function() return done end, 1))
  table.insert(out.warm_ms, (uv.hrtime() - t) / 1e6)
end
-- the daemon's part: the session/view round trip alone
out.view_ms = {}
for _ = 1, tonumber(vim.env.SD_BENCH_REPS) do
  local done = false
  local t = uv.hrtime()
  require("sessiondag.client").request("session/view", { session_id = session.id, kind = "chat" }, function()
    done = true
  end)
  assert(vim.wait(30000, function() return done end, 1))
  table.insert(out.view_ms, (uv.hrtime() - t) / 1e6)
end
-- streaming: a running model call on the 2,000-node chat, then text deltas as the daemon sends them
chat.on_update({ session_id = session.id, kind = "node_appended", node = { id = "bench-u", role = "user",
  caller = "ROOT", name = "user", status = "completed", output = "bench" } })
chat.on_update({ session_id = session.id, kind = "node_appended", node = { id = "bench-l", role = "llm",
  caller = "bench-u", name = "scripted", status = "running" } })
out.delta_us = {}
local words = { "lorem ", "ipsum ", "dolor\n", "sit amet, ", "consectetur " }
for i = 1, tonumber(vim.env.SD_BENCH_DELTAS) do
  local t = uv.hrtime()
  chat.on_update({ session_id = session.id, kind = "text_delta", node_id = "bench-l", delta = words[i % 5 + 1] })
  table.insert(out.delta_us, (uv.hrtime() - t) / 1e3)
end
-- the floor: one nvim_buf_set_lines of the last line
local b = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false))
out.floor_us = {}
for i = 1, tonumber(vim.env.SD_BENCH_DELTAS) do
  local t = uv.hrtime()
  vim.api.nvim_buf_set_lines(b, -2, -1, false, { "line " .. i })
  table.insert(out.floor_us, (uv.hrtime() - t) / 1e3)
end
io.stderr:write("BENCH " .. vim.json.encode(out) .. "\n")
vim.cmd("qa!")
"""


def build_session(state: Path, work: Path, turns: int) -> str:
    from sessiondag import Call
    from sessiondag.store import SessionStore
    store = SessionStore(str(state))
    h = store.open_session(None, working_dir=str(work))
    s = store.session(h.id)
    with s.batched():
        for k in range(turns):
            u = s.append(Call("user", "user", output=f"question {k}: " + "why " * 10, predecessor=s.head_id))
            l1 = s.append(Call("llm", "scripted", output=f"let me look {k}", caller=u.id, predecessor=u.id))
            t = s.append(Call("code", "read_file", input={"path": f"f{k}.txt"}, output="x" * 200, caller=l1.id,
                              predecessor=l1.id, metadata={"tool_call_id": f"call_{k}"}))
            s.append(Call("llm", "scripted", output=f"answer {k}\n" + "because " * 12, caller=u.id,
                          predecessor=t.id))
    s.commit_turn("bench: 2,000 nodes")
    store.close()
    return h.id


def startup_times(tmp: Path, runs: int) -> tuple[list[float], list[float], list[float]]:
    """Per run: our plugin's sourcing time, the median of Neovim's bundled plugins, total startup (ms)."""
    init = tmp / "init.lua"
    init.write_text(f"vim.opt.rtp:prepend({str(PLUGIN)!r})\n")
    ours, bundled, total = [], [], []
    for i in range(runs):
        log = tmp / f"startup{i}.log"
        subprocess.run([NVIM, "--headless", "-u", str(init), "-i", "NONE", "-n", "--startuptime", str(log),
                        "+qa!"], check=True, capture_output=True, env={**os.environ, "XDG_CONFIG_HOME": str(tmp),
                                                                        "XDG_DATA_HOME": str(tmp)})
        others = []
        for line in log.read_text().splitlines():
            m = re.match(r"\s*([\d.]+)\s+([\d.]+)\s+([\d.]+):\s+sourcing (.*)", line)
            if m:
                self_ms, path = float(m.group(3)), m.group(4)
                if path.endswith("editors/nvim/plugin/sessiondag.lua"):
                    ours.append(self_ms)
                elif "/runtime/plugin/" in path:
                    others.append(self_ms)
            m = re.match(r"\s*([\d.]+)\s+[\d.]+:\s+--- NVIM STARTED ---", line)
            if m:
                total.append(float(m.group(1)))
        bundled.append(statistics.median(others) if others else 0.0)
    return ours, bundled, total


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if not Path(NVIM).exists():
        print(f"nvim not found at {NVIM}: install the project's `nvim` extra (make install)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="sdnvb-", dir="/tmp"))
    os.chmod(tmp, 0o700)
    daemon = None
    try:
        ours, bundled, total = startup_times(tmp, 5 if quick else 20)
        state, work = tmp / "state", tmp / "work"
        work.mkdir()
        turns = 500  # 4 nodes a turn: 2,000 nodes
        build_session(state, work, turns)
        env = {**os.environ, "SESSIONDAG_HOME": str(state), "XDG_RUNTIME_DIR": str(tmp),
               "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               "SD_BENCH_ROWS": str(3 * turns), "SD_BENCH_REPS": "5" if quick else "15",
               "SD_BENCH_DELTAS": "300" if quick else "2000"}
        daemon = subprocess.Popen([str(BIN / "sessiondag"), "serve", "--socket", "--state-dir", str(state)],
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        for line in daemon.stderr:
            if line.startswith("sessiondag: ready"):
                break
        lua = tmp / "bench.lua"
        lua.write_text(BENCH_LUA)
        cold, warm, delta, floor, view = [], [], [], [], []
        for _ in range(2 if quick else 5):  # cold runs: a fresh Neovim each
            r = subprocess.run([NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set rtp^={PLUGIN}",
                                "--cmd", "runtime! plugin/sessiondag.lua", "-c", f"luafile {lua}"],
                               cwd=work, env=env, capture_output=True, text=True, timeout=300)
            m = re.search(r"^BENCH (.*)$", r.stderr, re.M)
            if not m:
                print(r.stderr, file=sys.stderr)
                return 1
            res = json.loads(m.group(1))
            cold.append(res["cold_ms"])
            warm += res["warm_ms"]
            view += res["view_ms"]
            delta += res["delta_us"]
            floor += res["floor_us"]
        med = statistics.median

        def p99(xs):
            return sorted(xs)[int(len(xs) * 0.99) - 1]
        print(f"{'measure':58} {'median':>10} {'p99/max':>10} {'target':>10}")
        print(f"{'plugin load: sourcing plugin/sessiondag.lua (ms)':58} {med(ours):10.3f} {max(ours):10.3f} {'< 1':>10}")
        print(f"{'  Neovim bundled runtime plugin, median per file (ms)':58} {med(bundled):10.3f} {max(bundled):10.3f}")
        print(f"{'  whole nvim startup with the plugin (ms)':58} {med(total):10.1f} {max(total):10.1f}")
        print(f"{':Sessiondag -> populated chat, 2,000 nodes, cold (ms)':58} {med(cold):10.1f} {max(cold):10.1f} {'< 200':>10}")
        print(f"{'  reload of the populated chat, warm (ms)':58} {med(warm):10.1f} {p99(warm):10.1f}")
        print(f"{'  of which the daemon: session/view round trip (ms)':58} {med(view):10.1f} {p99(view):10.1f}")
        print(f"{'streaming: one text delta into the chat (ms)':58} {med(delta) / 1e3:10.3f} {p99(delta) / 1e3:10.3f} {'< 5':>10}")
        print(f"{'  floor: one nvim_buf_set_lines (ms)':58} {med(floor) / 1e3:10.3f} {p99(floor) / 1e3:10.3f}")
        print(f"\nratios: plugin load / bundled plugin = {med(ours) / max(med(bundled), 1e-9):.2f}; "
              f"cold open / target = {med(cold) / 200:.2f}; delta / target = {med(delta) / 5000:.3f}; "
              f"delta / floor = {med(delta) / max(med(floor), 1e-9):.1f}x")
        return 0
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
