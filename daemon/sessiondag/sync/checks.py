"""What must not leave with a push: values that look like credentials (typed `secret_in_session`,
node and field named) and objects over `sync.max_object_bytes` (typed `sync_object_too_large`).

Secrets looked for: the configured provider keys' actual values (agent.openai_api_key,
agent.anthropic_api_key, the profiles' api_key_env values) and the common token shapes below.
Only what would be sent is scanned: the chunks, spilled bodies and meta of the new commits, and the
files of their workspace checkpoints (each named by its path and the turn that snapshotted it).
"""

from __future__ import annotations

import re
from typing import Iterable

import orjson

from ..core.settings import Settings
from .errors import ObjectTooLargeError, SecretInSessionError

# (what it is, literals one of which every match contains, the shape): the literals are searched
# first (a substring search in C), the pattern only where one occurs — a regex with many branches
# over megabytes of prose costs seconds.
TOKEN_SHAPES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (n, lits, re.compile(p)) for n, lits, p in (
        ("private key", ("PRIVATE KEY-----",), r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
        ("AWS access key id", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"),
        ("GitHub token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
        ("GitLab token", ("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
        ("Slack token", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"), r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
        ("Anthropic key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}\b"),
        ("OpenAI key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}\b"),
        ("Google API key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("Stripe key", ("_live_",), r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,}\b"),
        ("JSON web token", ("eyJ",), r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ))
_BLOB_REF = re.compile(rb'"\$blob":"([0-9a-f]{40})"')
# Every literal above contains one of these (fewer passes over a text that holds none: most do;
# tests/sync/test_refusals.py checks the cover).
_TRIGGERS = ("-----", "IA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "sk-", "AIza",
             "_live_", "eyJ")


def configured_keys(settings: Settings) -> list[str]:
    keys = [settings.openai_api_key, settings.anthropic_api_key, *settings.profile_keys.values()]
    return [k for k in keys if isinstance(k, str) and len(k) >= 8]


def _find(text: str, keys: list[str]) -> str | None:
    for k in keys:
        if k in text:
            return "a configured provider key"
    if not any(t in text for t in _TRIGGERS):
        return None
    for name, literals, pattern in TOKEN_SHAPES:
        if any(lit in text for lit in literals) and pattern.search(text):
            return name
    return None


def _walk(value: object, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(str(k), path)
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def _suspect(text: str, keys: list[str]) -> bool:
    """One pass over a whole text: could it hold a secret at all? (the field-by-field walk that
    names node and field runs only then)."""
    return _find(text, keys) is not None or any(orjson.dumps(k)[1:-1].decode() in text for k in keys)


def scan_chunk(data: bytes, keys: list[str]) -> None:
    """Raise SecretInSessionError for the first node field of a chunk (JSONL) holding a secret.
    The JSON text is searched first (a key also in its JSON-escaped spelling); only a suspect line
    is parsed and walked field by field to name the node and field."""
    if not _suspect(data.decode("utf-8", "replace"), keys):
        return
    for line in data.splitlines():
        if not _suspect(line.decode("utf-8", "replace"), keys):
            continue
        if not line.strip():
            continue
        d = orjson.loads(line)
        for field in ("input", "output", "reads", "metadata", "name"):
            for path, text in _walk(d.get(field), field):
                what = _find(text, keys)
                if what:
                    raise SecretInSessionError(
                        f"node {d.get('id')!r} field {path} holds what looks like {what}; "
                        f"not pushed (--allow-secrets to send it anyway)",
                        node_id=d.get("id"), field=path, shape=what)


def find_in(data: bytes, keys: list[str]) -> bool:
    """Could `data` (any bytes: a working-dir file may be binary) hold a secret?"""
    return _find(data.decode("utf-8", "replace"), keys) is not None


def scan_text(data: bytes, keys: list[str], node_id: str | None, field: str) -> None:
    what = _find(data.decode("utf-8", "replace"), keys)
    if what:
        raise SecretInSessionError(f"node {node_id!r} field {field} holds what looks like {what}; not pushed "
                                   f"(--allow-secrets to send it anyway)", node_id=node_id, field=field, shape=what)


def biggest_node(data: bytes) -> str | None:
    lines = [x for x in data.splitlines() if x.strip()]
    if not lines:
        return None
    try:
        nid: str | None = orjson.loads(max(lines, key=len)).get("id")
        return nid
    except (orjson.JSONDecodeError, AttributeError):
        return None


def referencing_node(blob_id: str, chunks: Iterable[bytes]) -> str | None:
    for data in chunks:
        for line in data.splitlines():
            if blob_id.encode() in line and blob_id.encode() in _BLOB_REF.findall(line):
                try:
                    found: str | None = orjson.loads(line).get("id")
                    return found
                except orjson.JSONDecodeError:
                    return None
    return None


def too_large(size: int, limit: int, node_id: str | None, what: str) -> ObjectTooLargeError:
    return ObjectTooLargeError(f"{what} of node {node_id!r} is {size} bytes, over sync.max_object_bytes "
                               f"({limit}): not pushed", node_id=node_id, size=size, limit=limit)
