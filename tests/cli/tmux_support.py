"""A command in a real terminal: tmux runs it in a pane, tests type with send-keys and read the
screen (and its scrollback) with capture-pane, waiting for content with a deadline, never a sleep."""

from __future__ import annotations

import shutil
import subprocess
import pytest

from setup_check import require
from waiting import wait_until


class Tmux:
    def __init__(self, tmp_path, argv: list[str], *, env: dict[str, str], cwd, width: int = 110, height: int = 32):
        self.tmux = shutil.which("tmux")
        require(self.tmux, "tmux (mk/nvim.mk installs it from apt)", "nvim-tools")
        self.sock = str(tmp_path / "tmux.sock")
        env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        cmd = " ".join(_quote(a) for a in argv) + "; echo \"[exited $?]\"; sleep 600"
        subprocess.run([self.tmux, "-S", self.sock, "-f", "/dev/null", "new-session", "-d", "-s", "t",
                        "-x", str(width), "-y", str(height), "-c", str(cwd), *env_args, cmd],
                       check=True, env={**env, "TERM": "xterm-256color"})

    def screen(self) -> str:
        return subprocess.run([self.tmux, "-S", self.sock, "capture-pane", "-p", "-J", "-S", "-500", "-t", "t"],
                              capture_output=True, text=True).stdout

    def wait_for(self, pred, what: str, timeout: float = 60.0) -> str:
        if isinstance(pred, str):
            text = pred
            pred = lambda s: text in s  # noqa: E731
        last = [""]

        def shown() -> str | None:
            last[0] = self.screen()
            return last[0] if pred(last[0]) else None
        # polling the screen for a condition, not a fixed wait
        return wait_until(shown, lambda: f"{what}; screen:\n{last[0]}", timeout=timeout, interval=0.05)

    def type(self, text: str, enter: bool = True) -> None:
        subprocess.run([self.tmux, "-S", self.sock, "send-keys", "-t", "t", "-l", text], check=True)
        if enter:
            self.keys("Enter")

    def keys(self, *keys: str) -> None:
        subprocess.run([self.tmux, "-S", self.sock, "send-keys", "-t", "t", *keys], check=True)

    def close(self) -> None:
        subprocess.run([self.tmux, "-S", self.sock, "kill-server"], capture_output=True)


def _quote(a: str) -> str:
    import shlex
    return shlex.quote(str(a))
