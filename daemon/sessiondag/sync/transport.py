"""dulwich's git clients for any remote URL, with credentials found the usual git ways and the
failures of a transport turned into typed errors (unreachable, authentication).

- a path or file:// — the local client; git:// — TCP; http(s):// — smart HTTP; ssh:// and
  scp-style `user@host:path` — the system `ssh` ($GIT_SSH_COMMAND / $GIT_SSH if set, else
  `ssh -o BatchMode=yes`: never a prompt on a daemon's terminal);
- HTTP credentials: the URL's user:password, else on a 401 `git credential fill` (the configured
  credential helpers, $GIT_ASKPASS; GIT_TERMINAL_PROMPT=0), approved or rejected after the retry.
- Bounds (`Bounds`, settings `sync.transfer_idle_s` and `sync.max_receive_bytes`): a remote silent
  for longer than the idle limit is given up (`RemoteStalledError`: sync_unreachable, reason
  "timeout"; git:// through the socket's timeout, http(s):// through urllib3's connect and read
  timeouts, ssh:// through a bounded wait on the pipe from ssh, whose keepalives in our default
  command (`ServerAliveInterval`) catch a dead connection besides), and a
  transfer that receives more than the limit stops there (`RemoteTooMuchError`:
  sync_bad_remote_data, reason "too_much"). What a bounded transfer received is dropped by its
  caller (a fetch goes to a quarantine, fetch.py).
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from contextlib import closing

from dulwich.client import (GitClient, HTTPUnauthorized, LocalGitClient, default_urllib3_manager,
                            get_transport_and_path)
from dulwich.config import StackedConfig
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.file import FileLocked
from dulwich.object_store import GraphTraversalReachability
from dulwich.repo import Repo

from ..core.errors import StorageError
from .errors import (RemoteAuthError, RemoteDataError, RemoteRejectedError, RemoteStalledError,
                     RemoteTooMuchError, RemoteUnreachableError, SyncError)

if TYPE_CHECKING:
    import urllib3

    from ..core.settings import Settings


@dataclass(frozen=True)
class Bounds:
    idle_s: float = 60.0            # no byte for this long: the remote is given up
    max_bytes: int = 4 << 30        # what one transfer may receive

    @classmethod
    def of(cls, settings: Settings) -> "Bounds":
        return cls(settings.transfer_idle_s, settings.max_receive_bytes)


class _TooMuch(Exception):
    pass


class _Read(Protocol):
    """A reader's `read` as dulwich's connections have it (its arguments handed on as they come)."""
    def __call__(self, *a: object) -> bytes: ...


def _bound(client: GitClient, bounds: Bounds, got: list[int]) -> None:
    """Count what the client receives (`got[0]`) and give its reads the idle limit. dulwich has no
    hook for either: its protocol object's `read` is wrapped where the connection is made (TCP,
    ssh), its HTTP requests' body readers likewise."""
    def counted(read: _Read) -> _Read:
        def inner(*a: object) -> bytes:
            data = read(*a)
            got[0] += len(data)
            if got[0] > bounds.max_bytes:
                raise _TooMuch()
            return data
        return inner

    connect = getattr(client, "_connect", None)
    if connect is not None:
        def bounded_connect(*a: object, **kw: object) -> object:   # dulwich's private _connect: untyped
            proto, can_read, stderr = connect(*a, **kw)
            raw = getattr(getattr(proto.read, "__self__", None), "raw", None)
            sock = getattr(raw, "_sock", None)
            proc = getattr(getattr(proto._close, "__self__", None), "proc", None)   # ssh: its process
            if isinstance(sock, socket.socket):
                sock.settimeout(bounds.idle_s)      # git://: a silent remote raises TimeoutError
            elif isinstance(proc, subprocess.Popen) and raw is proc.stdout and raw is not None:
                # ssh: the pipe from the ssh process (nothing read from it yet); its keepalives
                # catch a dead connection, not a live server whose git stopped sending
                proto.read = PipeReader(raw.fileno(), bounds.idle_s, proc).read
            proto.read = counted(proto.read)
            return proto, can_read, stderr
        client._connect = bounded_connect  # type: ignore[attr-defined]
    request = getattr(client, "_http_request", None)
    if request is not None:
        def bounded_request(*a: object, **kw: object) -> object:   # dulwich's private _http_request: untyped
            resp, read = request(*a, **kw)
            return resp, counted(read)
        client._http_request = bounded_request  # type: ignore[attr-defined]

class PipeReader:
    """read(n) over a pipe, as the buffered reader it replaces (n bytes or what came before EOF),
    each wait for data bounded by `idle_s`: past it the process at the other end (ssh) is killed
    (closing it would wait for a remote that no longer talks) and TimeoutError raised."""

    def __init__(self, fd: int, idle_s: float, proc: subprocess.Popen[bytes]):
        self.fd, self.idle_s, self.proc = fd, idle_s, proc
        self.buf = bytearray()

    def _fill(self, want: int) -> bool:
        ready, _, _ = select.select([self.fd], [], [], self.idle_s)
        if not ready:
            self.proc.kill()
            raise TimeoutError(f"nothing from the remote for {self.idle_s:g} s")
        data = os.read(self.fd, max(want, 1 << 16))
        self.buf += data
        return bool(data)

    def read(self, n: int | None = -1) -> bytes:
        while (n is None or n < 0 or len(self.buf) < n) and self._fill((n or 0) - len(self.buf)):
            pass
        if n is None or n < 0:
            n = len(self.buf)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


T = TypeVar("T")
_AUTH_WORDS = ("permission denied", "authentication failed", "access denied", "401", "403",
               "could not read username", "host key verification failed")


def _ssh_command() -> str:
    cmd = os.environ.get("GIT_SSH_COMMAND")
    if cmd:
        return cmd
    if os.environ.get("GIT_SSH"):
        return os.environ["GIT_SSH"]
    return "ssh -o BatchMode=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4"


def _config() -> StackedConfig | None:
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
               password: str | None = None, bounds: Bounds | None = None) -> tuple[GitClient, str]:
    path = local_path(url)
    if path is not None and not os.path.isdir(path):
        raise RemoteUnreachableError(f"remote {url!r}: no such repository", url=url)
    config = _config()
    pool: urllib3.PoolManager | None = None
    if bounds is not None and url.split("://", 1)[0] in ("http", "https"):
        # a PoolManager, or a ProxyManager (one); dulwich's annotation adds its AuthCallbackPoolManager,
        # which it makes only given an auth callback (none here)
        pool = default_urllib3_manager(config, timeout=bounds.idle_s)  # type: ignore[assignment]
    try:
        client, where = get_transport_and_path(url, config=config, operation=operation, username=username,
                                               password=password, ssh_command=_ssh_command(), pool_manager=pool)
    except ValueError as e:
        raise RemoteUnreachableError(f"remote {url!r}: {e}", url=url) from None
    if isinstance(client, LocalGitClient):   # dulwich serves the remote repository in this process
        client._open_repo = lambda p: closing(graph_reachability(Repo(os.fsdecode(p))))  # type: ignore[method-assign,assignment]
    return client, where


def graph_reachability(repo: Repo) -> Repo:
    """`repo` walking its commit graph for what is reachable, never a pack's bitmap: dulwich takes
    the bitmaps once any pack has one (a `git repack -b` leaves one) and then fails on every pack
    that has none — the packs written since — with FileNotFoundError."""
    store = repo.object_store
    store.get_reachability_provider = (  # type: ignore[method-assign]
        lambda prefer_bitmaps=True: GraphTraversalReachability(store))
    return repo


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


def call(url: str, operation: str, fn: Callable[[GitClient, str], T], bounds: Bounds | None = None) -> T:
    """fn(client, path) against the remote, with one credential round on an HTTP 401; transport
    failures raised as RemoteUnreachableError / RemoteAuthError (typed, the URL named); the
    transfer held to `bounds` (default: Bounds())."""
    bounds = bounds or Bounds()
    creds: dict[str, str] = {}
    for attempt in (0, 1):
        got = [0]
        try:
            client, path = client_for(url, operation, creds.get("username"), creds.get("password"), bounds)
            _bound(client, bounds, got)
            result = fn(client, path)
        except _TooMuch:
            raise RemoteTooMuchError(f"remote {url!r} sent more than {bounds.max_bytes} bytes "
                                     f"(sync.max_receive_bytes): stopped, nothing kept", url=url,
                                     reason="too_much", limit=bounds.max_bytes) from None
        except TimeoutError:
            raise _stalled(url, bounds) from None
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
            if _timed_out(e):
                raise _stalled(url, bounds) from None
            if _auth_message(e):
                raise RemoteAuthError(f"remote {url!r} refused us: {e}", url=url) from None
            raise RemoteUnreachableError(f"remote {url!r}: {e}", url=url) from None
        except (OSError, socket.error, EOFError) as e:
            raise _os_error(url, e) from None
        except FileLocked as e:   # dulwich writing a path remote's refs here: a lock another writer holds (or left)
            raise RemoteRejectedError(f"remote {url!r}: a ref is locked by another writer ({e.lockfilename!r}): "
                                      f"retry once it is done, or remove a lock a crashed writer left", url=url,
                                      reason="locked") from None
        except KeyError as e:
            if operation == "pull" and local_path(url) is not None:   # dulwich serving it here: an object it lacks
                raise RemoteDataError(f"remote {url!r}: its repository lacks object {e}", url=url,
                                      reason="unreadable") from None
            raise
        except Exception as e:  # urllib3's errors and the like: reported, typed, never a crash
            if _timed_out(e):
                raise _stalled(url, bounds) from None
            if type(e).__module__.startswith("urllib3"):
                raise RemoteUnreachableError(f"remote {url!r} unreachable: {e}", url=url) from None
            raise
        if creds:
            _credential("approve", url, creds)
        return result
    raise AssertionError("unreachable")


def _os_error(url: str, e: BaseException) -> SyncError | StorageError:
    """What an OSError during a transfer was: a file of the remote repository (a path remote) that
    could not be read is the remote's data; a file here is local storage; anything else (a socket,
    a refused connection, no ssh) is the remote out of reach."""
    path = getattr(e, "filename", None)
    if isinstance(e, OSError) and isinstance(path, str) and os.path.isabs(path):
        remote = local_path(url)
        if remote is not None and os.path.abspath(path).startswith(os.path.abspath(remote) + os.sep):
            return RemoteDataError(f"remote {url!r}: its repository could not be read: {e}", url=url,
                                   reason="unreadable")
        return StorageError(f"a local file could not be read or written during the transfer with {url!r}: {e}",
                            e.errno, path)
    return RemoteUnreachableError(f"remote {url!r} unreachable: {e}", url=url)


def _timed_out(e: BaseException | None) -> bool:
    """Did a read time out under the error dulwich or urllib3 wrapped it in?"""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, TimeoutError) or type(e).__name__ in ("ReadTimeoutError", "ConnectTimeoutError"):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def _stalled(url: str, bounds: Bounds) -> RemoteStalledError:
    return RemoteStalledError(f"remote {url!r} sent nothing for {bounds.idle_s:g} s (sync.transfer_idle_s): "
                              f"given up", url=url, reason="timeout", idle_s=bounds.idle_s)


def remote_refs(url: str, bounds: Bounds | None = None) -> dict[bytes, bytes]:
    """The remote's refs (ls-remote): nothing else is fetched."""
    def ls(client: GitClient, path: str) -> dict[bytes, bytes]:
        r = client.get_refs(path.encode() if isinstance(path, str) else path)
        # a newer dulwich's LsRemoteResult, an older one's dict (which the annotation no longer names)
        refs: Mapping[bytes, bytes | None] = getattr(r, "refs", r)  # type: ignore[arg-type]
        return {k: v for k, v in refs.items() if v is not None}
    return call(url, "pull", ls, bounds)
