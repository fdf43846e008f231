"""The real Neovim TUI under tmux: type `:Sessiondag`, a prompt and <CR>; read the screen with
capture-pane; the captured screen is saved as an artifact (tests/editors/nvim/artifacts/, or
$SESSIONDAG_ARTIFACTS)."""

import os
import select
import shutil
import subprocess
from pathlib import Path

import pytest

from nvim_support import PLUGIN, nvim_binary
from setup_check import require
from waiting import wait_until


def _tmux() -> str:
    t = shutil.which("tmux")
    require(t, "tmux (mk/nvim.mk installs it from apt)", "nvim-tools")
    return t


def _screen(tmux, sock) -> str:
    return subprocess.run([tmux, "-S", sock, "capture-pane", "-p", "-t", "sd"], capture_output=True, text=True).stdout


def _wait_screen(tmux, sock, pred, what, timeout=60.0) -> str:
    last = [""]

    def shown() -> str | None:
        last[0] = _screen(tmux, sock)
        return last[0] if pred(last[0]) else None
    # polling the screen for a condition, not a fixed wait
    return wait_until(shown, lambda: f"{what}; screen:\n{last[0]}", timeout=timeout, interval=0.05)


def test_tui_chat_under_tmux(nv):
    tmux = _tmux()
    nv.write_script("- match: hello from tmux\n  text: Hi! This reply came through the daemon into the TUI.\n")
    nv.start_daemon()
    sock = str(nv.runtime / "tmux.sock")
    nvim = nvim_binary()
    init = nv.tmp / "init.lua"  # what a user's config would hold: the plugin and a statusline component
    init.write_text(f"vim.opt.rtp:prepend({str(PLUGIN)!r})\n"
                    "vim.o.laststatus = 2\n"
                    "vim.o.statusline = \"%f %=%{v:lua.require'sessiondag'.status()}\"\n")
    cmd = f"{nvim} -u {init} -i NONE -n"
    env_args = [a for k, v in nv.vars.items() for a in ("-e", f"{k}={v}")]
    subprocess.run([tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "sd", "-x", "120", "-y", "36",
                    "-c", str(nv.work), *env_args, cmd], check=True, env={**nv.env, "TERM": "xterm-256color"})
    pane_pid = int(subprocess.run([tmux, "-S", sock, "display-message", "-p", "-t", "sd", "#{pane_pid}"],
                                  capture_output=True, text=True, check=True).stdout)
    pidfd = os.pidfd_open(pane_pid)
    try:
        _wait_screen(tmux, sock, lambda s: "~" in s, "nvim to start")
        subprocess.run([tmux, "-S", sock, "send-keys", "-t", "sd", ":Sessiondag", "Enter"], check=True)
        _wait_screen(tmux, sock, lambda s: "# sessiondag s-" in s and "sessiondag://prompt" in s, "the chat")
        subprocess.run([tmux, "-S", sock, "send-keys", "-t", "sd", "-l", "hello from tmux"], check=True)
        subprocess.run([tmux, "-S", sock, "send-keys", "-t", "sd", "Enter"], check=True)
        screen = _wait_screen(tmux, sock, lambda s: "came through the daemon into the TUI" in s, "the reply")
        screen = _wait_screen(tmux, sock, lambda s: "sd:" in s and "▶" not in s, "the statusline after the turn")
        out = Path(os.environ.get("SESSIONDAG_ARTIFACTS") or Path(__file__).parent / "artifacts")
        out.mkdir(parents=True, exist_ok=True)
        (out / "nvim_tui_screen.txt").write_text(screen)
        assert "## You" in screen and "hello from tmux" in screen and "## Assistant" in screen
    finally:
        subprocess.run([tmux, "-S", sock, "kill-server"], capture_output=True)
        # nvim must be gone before the daemon stops, or it would reconnect by starting a new one
        select.select([pidfd], [], [], 30)
        os.close(pidfd)
