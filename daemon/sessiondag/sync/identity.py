"""The identity of a working dir's project, so that a session made in one checkout binds to the
checkout of the same project on another machine: for a git checkout, the normalized URL of its
remote (`origin`, else the first one) and the dir's path relative to the checkout's root; else the
absolute path.

    {"kind": "git", "remote": "github.com/org/repo", "path": "sub/dir"}   ("." at the root)
    {"kind": "path", "path": "/home/me/scratch"}

URLs are normalized so the https, ssh and scp-style spellings of one repository agree:
credentials, a `.git` suffix and trailing slashes dropped, the host lowercased.
"""

from __future__ import annotations

import os
import re
from typing import NotRequired, TypedDict
from urllib.parse import urlsplit

from dulwich.errors import NotGitRepository
from dulwich.repo import Repo

KEY = "working_dir_identity"    # session meta: the identity recorded for the session's working dir


def normalize_url(url: str) -> str:
    url = url.strip()
    if "://" in url:
        u = urlsplit(url)
        host = (u.hostname or "").lower()
        if u.port and u.scheme not in ("ssh", "git", "http", "https"):
            host += f":{u.port}"
        path = u.path
        out = f"{host}{path}" if host else path
    elif re.match(r"^[^/]*:", url) and not os.path.exists(url):   # scp-style user@host:path
        host, _, path = url.partition(":")
        out = host.rpartition("@")[2].lower() + "/" + path.lstrip("/")
    else:
        out = os.path.abspath(url)
    out = out.rstrip("/")
    if out.endswith(".git"):
        out = out[:-4]
    return out.rstrip("/")


def _remote_url(repo: Repo) -> str | None:
    cfg = repo.get_config()
    try:
        return cfg.get((b"remote", b"origin"), b"url").decode()
    except KeyError:
        pass
    for section in cfg.sections():
        if len(section) == 2 and section[0] == b"remote":
            try:
                return cfg.get(section, b"url").decode()
            except KeyError:
                continue
    return None


class Identity(TypedDict):
    """A working dir's project identity: a git checkout's remote and its path in it, or a bare path."""
    kind: str                   # "git" | "path"
    path: str
    remote: NotRequired[str]    # kind "git"


def identify(working_dir: str | None) -> Identity | None:
    if not working_dir:
        return None
    wd = os.path.realpath(working_dir)
    try:
        repo = Repo.discover(wd)
    except (NotGitRepository, OSError, ValueError):
        return {"kind": "path", "path": wd}
    try:
        root = os.path.realpath(repo.path)
        url = _remote_url(repo)
    except Exception:  # an unreadable config: the path is all we know
        return {"kind": "path", "path": wd}
    finally:
        repo.close()
    if url is None:
        return {"kind": "path", "path": wd}
    return {"kind": "git", "remote": normalize_url(url), "path": os.path.relpath(wd, root)}


def same_project(recorded: object, working_dir: str | None) -> bool:
    """Is `working_dir` the checkout of the project `recorded` names (a git identity only: a bare
    path on another machine proves nothing)?"""
    if not isinstance(recorded, dict) or recorded.get("kind") != "git":
        return False
    here = identify(working_dir)
    return here is not None and bool(here) and here.get("kind") == "git" and here.get("remote") == recorded.get("remote") \
        and here.get("path") == recorded.get("path")
