"""Real git servers on 127.0.0.1 for the sync tests, each started here and stopped at the end:

- a bare repository by path (and its file:// URL);
- `git daemon --enable=receive-pack` (git daemon takes no port 0: a free port is picked by binding
  a socket to 0 and closing it, then readiness is a successful connect, retried on refusal until a
  deadline);
- smart HTTP: `git http-backend` behind a small threaded CGI server (optional basic auth);
- ssh: `sshd` (Debian's openssh-server, installed by mk/sync.mk) with a config, a host key and a
  client key generated in a tmp dir, reached with GIT_SSH_COMMAND.
"""

from __future__ import annotations

import base64
import http.server
import os
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field

from setup_check import setup_failed

SSHD = "/usr/sbin/sshd"
HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"


def need(path: str, what: str) -> None:
    if not (shutil.which(path) or os.path.exists(path)):
        setup_failed(f"{what} ({path}, mk/sync.mk installs it from apt)", "sync-install")


def bare_repo(path: str) -> str:
    subprocess.run(["git", "init", "-q", "--bare", path], check=True)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > end:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {deadline}s") from None
            time.sleep(0.02)


@dataclass
class Server:
    url: str
    repo: str
    stop: list = field(default_factory=list)

    def close(self) -> None:
        for fn in reversed(self.stop):
            fn()


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def git_daemon(base: str) -> Server:
    repo = bare_repo(os.path.join(base, "sessions.git"))
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
                                 f"--base-path={base}", "--export-all", "--enable=receive-pack", base],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc)
        except RuntimeError:
            _kill(proc)
            continue  # the port was taken between our probe and its bind: another one
        return Server(f"git://127.0.0.1:{port}/sessions.git", repo, [lambda: _kill(proc)])
    raise RuntimeError("git daemon did not start")


class _CGI(http.server.BaseHTTPRequestHandler):
    root = ""
    auth: str | None = None

    def log_message(self, *args) -> None:  # quiet: logs go nowhere near a protocol stream
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        if self.auth is not None:
            got = self.headers.get("Authorization", "")
            if got != "Basic " + base64.b64encode(self.auth.encode()).decode():
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="sessions"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        path, _, query = self.path.partition("?")
        env = {"PATH": os.environ.get("PATH", ""), "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "REMOTE_USER": "tester",
               "REMOTE_ADDR": "127.0.0.1", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.receivepack",
               "GIT_CONFIG_VALUE_0": "true"}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        body = self._body() if self.command == "POST" else b""
        env["CONTENT_LENGTH"] = str(len(body))
        out = subprocess.run([HTTP_BACKEND], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        if not _:
            head, _, rest = out.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    do_GET = do_POST = _handle


def http_server(base: str, auth: str | None = None) -> Server:
    need(HTTP_BACKEND, "git http-backend")
    repo = bare_repo(os.path.join(base, "sessions.git"))
    handler = type("Handler", (_CGI,), {"root": base, "auth": auth})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    port = srv.server_address[1]

    def stop() -> None:
        srv.shutdown()
        srv.server_close()
    return Server(f"http://127.0.0.1:{port}/sessions.git", repo, [stop])


def ssh_server(base: str, force_command: str | None = None) -> tuple[Server, dict[str, str]]:
    """(server, environment for the client: GIT_SSH_COMMAND with the generated key).
    `force_command`: what sshd runs for every connection instead of the client's command (which
    it finds in $SSH_ORIGINAL_COMMAND)."""
    need(SSHD, "sshd")
    repo = bare_repo(os.path.join(base, "sessions.git"))
    keys = os.path.join(base, "keys")
    os.makedirs(keys, mode=0o700)
    for name in ("host", "client", "stranger"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(keys, name)], check=True)
    shutil.copy(os.path.join(keys, "client.pub"), os.path.join(keys, "authorized_keys"))
    os.chmod(os.path.join(keys, "authorized_keys"), 0o600)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir must exist
    for _ in range(5):
        port = free_port()
        cfg = os.path.join(base, "sshd_config")
        with open(cfg, "w") as f:
            f.write(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys}/host\nPidFile {base}/sshd.pid\n"
                    f"AuthorizedKeysFile {keys}/authorized_keys\nStrictModes no\nPasswordAuthentication no\n"
                    f"KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"
                    f"PubkeyAuthentication yes\nLogLevel ERROR\nSetEnv PATH={os.environ.get('PATH', '')}\n"
                    f"AcceptEnv GIT_PROTOCOL\n" + (f"ForceCommand {force_command}\n" if force_command else ""))
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc)
        except RuntimeError:
            _kill(proc)
            continue
        user = os.environ.get("USER") or "root"
        cmd = (f"ssh -i {keys}/client -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no "
               f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")
        srv = Server(f"ssh://{user}@127.0.0.1:{port}{repo}", repo, [lambda: _kill(proc)])
        srv.scp = f"{user}@127.0.0.1:{repo}"  # scp-style (port given through the ssh command)
        srv.port = port
        srv.keys = keys
        return srv, {"GIT_SSH_COMMAND": cmd}
    raise RuntimeError("sshd did not start")
