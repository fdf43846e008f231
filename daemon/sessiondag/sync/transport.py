"""dulwich's git clients for any remote URL, with credentials found the usual git ways and the
failures of a transport turned into typed errors (unreachable, authentication).

- a path or file:// — the local client; git:// — TCP; http(s):// — smart HTTP; ssh:// and
  scp-style `user@host:path` — the system `ssh` ($GIT_SSH_COMMAND / $GIT_SSH if set, else
  `ssh -o BatchMode=yes`: never a prompt on a daemon's terminal);
- HTTP credentials: the URL's user:password, else on a 401 `git credential fill` (the configured
  credential helpers, $GIT_ASKPASS; GIT_TERMINAL_PROMPT=0), approved or rejected after the retry.
"""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit

from dulwich.client import GitClient, HTTPUnauthorized, get_transport_and_path
from dulwich.config import StackedConfig
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository

from .errors import RemoteAuthError, RemoteUnreachableError, SyncError

T = TypeVar("T")
_AUTH_WORDS = ("permission denied", "authentication failed", "access denied", "401", "403",
               "could not read username", "host key verification failed")


def _ssh_command() -> str:
    cmd = os.environ.get("GIT_SSH_COMMAND")
    if cmd:
        return cmd
    if os.environ.get("GIT_SSH"):
        return os.environ["GIT_SSH"]
    return "ssh -o BatchMode=yes"


def _config() -> Any:
    try:
        return StackedConfig.default()
    except Exception:  # an unreadable ~/.gitconfig is not ours to judge: go without it
        return None


def is_local(url: str) -> bool:
    return "://" not in url and not _scp_like(url) or url.startswith("file://")


def _scp_like(url: str) -> bool:
    head = url.split("/", 1)[0]
    return ":" in head and not os.path.exists(url)


def local_path(url: str) -> str | None:
    if url.startswith("file://"):
        return urlsplit(url).path
    return url if is_local(url) else None


def client_for(url: str, operation: str, username: str | None = None,
               password: str | None = None) -> tuple[GitClient, str]:
    path = local_path(url)
    if path is not None and not os.path.isdir(path):
        raise RemoteUnreachableError(f"remote {url!r}: no such repository", url=url)
    try:
        return get_transport_and_path(url, config=_config(), operation=operation, username=username,
                                      password=password, ssh_command=_ssh_command())
    except ValueError as e:
        raise RemoteUnreachableError(f"remote {url!r}: {e}", url=url) from None


def _credential(action: str, url: str, fields: dict[str, str]) -> dict[str, str]:
    u = urlsplit(url)
    text = f"protocol={u.scheme}\nhost={u.netloc.rpartition('@')[2]}\npath={u.path.lstrip('/')}\n"
    text += "".join(f"{k}={v}\n" for k, v in fields.items()) + "\n"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        out = subprocess.run(["git", "credential", action], input=text, capture_output=True, text=True,
                             env=env, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def _auth_message(e: BaseException) -> bool:
    lines = getattr(e, "stderr_lines", None) or []
    text = (str(e) + " " + " ".join(x.decode("utf-8", "replace") for x in lines)).lower()
    return any(w in text for w in _AUTH_WORDS)


def call(url: str, operation: str, fn: Callable[[GitClient, str], T]) -> T:
    """fn(client, path) against the remote, with one credential round on an HTTP 401; transport
    failures raised as RemoteUnreachableError / RemoteAuthError (typed, the URL named)."""
    creds: dict[str, str] = {}
    for attempt in (0, 1):
        try:
            client, path = client_for(url, operation, creds.get("username"), creds.get("password"))
            result = fn(client, path)
        except HTTPUnauthorized:
            if creds:
                _credential("reject", url, creds)
                raise RemoteAuthError(f"remote {url!r} refused the credentials", url=url) from None
            creds = _credential("fill", url, {})
            if attempt == 1 or not creds.get("username"):
                raise RemoteAuthError(f"remote {url!r} needs credentials (none from the URL or git credential)",
                                      url=url) from None
            continue
        except SyncError:
            raise
        except NotGitRepository as e:
            raise RemoteUnreachableError(f"remote {url!r} is not a git repository: {e}", url=url) from None
        except (HangupException, GitProtocolError) as e:
            if _auth_message(e):
                raise RemoteAuthError(f"remote {url!r} refused us: {e}", url=url) from None
            raise RemoteUnreachableError(f"remote {url!r}: {e}", url=url) from None
        except (OSError, socket.error, EOFError) as e:
            raise RemoteUnreachableError(f"remote {url!r} unreachable: {e}", url=url) from None
        except Exception as e:  # urllib3's errors and the like: reported, typed, never a crash
            if type(e).__module__.startswith("urllib3"):
                raise RemoteUnreachableError(f"remote {url!r} unreachable: {e}", url=url) from None
            raise
        if creds:
            _credential("approve", url, creds)
        return result
    raise AssertionError("unreachable")


def remote_refs(url: str) -> dict[bytes, bytes]:
    """The remote's refs (ls-remote): nothing else is fetched."""
    def ls(client: GitClient, path: str) -> dict[bytes, bytes]:
        r = client.get_refs(path.encode() if isinstance(path, str) else path)
        refs = getattr(r, "refs", r)
        return {k: v for k, v in refs.items() if v is not None}
    return call(url, "pull", ls)
