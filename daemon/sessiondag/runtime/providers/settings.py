"""Provider profiles of the config file, and the built-in provider kinds' settings. Both come from
the process's settings (core/settings.py: defaults < config file < environment < flags); nothing here
reads the environment or the file itself.

    $XDG_CONFIG_HOME/sessiondag/config.toml   (else ~/.config/sessiondag/config.toml;
                                               $SESSIONDAG_CONFIG names another file)

    [providers.work]
    kind = "openai"                    # scripted | openai | anthropic
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-coder"
    api_key_env = "WORK_LLM_KEY"       # or api_key_command = "pass show llm/work" (first line of stdout)
    timeout = 60                       # seconds without a byte from the server (read timeout)
    deadline = 600                     # seconds for one whole call, retries included
    max_retries = 3                    # 429 / 5xx / connection errors, backoff with jitter, Retry-After honoured
    temperature = 0.2
    max_tokens = 4096
    headers = { "X-Team" = "infra" }

A profile name is accepted wherever a provider is (`--provider work`, `agent/prompt` {provider:
"work"}). A bad file or profile is an error naming it, never a silent fallback.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Any

from ...core.settings import PROVIDER_KINDS as KINDS
from ...core.settings import Settings
from .base import ProviderError

PROFILE_KEYS = {"kind", "base_url", "model", "api_key_env", "api_key_command", "timeout", "deadline", "max_retries",
                "temperature", "max_tokens", "headers", "script"}


def load_profiles(settings: Settings) -> dict[str, dict[str, Any]]:
    """The config file's provider profiles, checked; a bad one is an error naming it."""
    path = settings.config_file
    profiles = {name: dict(p) for name, p in settings.providers.items()}
    for name, p in profiles.items():
        unknown = set(p) - PROFILE_KEYS
        if unknown:
            raise ProviderError(f"settings file {path}: [providers.{name}] has unknown keys {sorted(unknown)}")
        if p.get("kind") not in KINDS:
            raise ProviderError(f"settings file {path}: [providers.{name}] kind must be one of {', '.join(KINDS)}")
    return profiles


def _api_key(name: str, p: dict[str, Any], settings: Settings) -> str | None:
    if p.get("api_key_env"):
        key = settings.profile_keys.get(p["api_key_env"])
        if not key:
            raise ProviderError(f"provider profile {name!r}: ${p['api_key_env']} is not set")
        return key
    if p.get("api_key_command"):
        try:
            out = subprocess.run(shlex.split(p["api_key_command"]), capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ProviderError(f"provider profile {name!r}: api_key_command failed: {e}") from None
        if out.returncode != 0 or not out.stdout.strip():
            raise ProviderError(f"provider profile {name!r}: api_key_command exited {out.returncode} "
                                f"without a key: {out.stderr.strip()[:200]}")
        return out.stdout.strip().splitlines()[0]
    return None


WHAT = {  # kind -> what to set
    "openai": "OPENAI_BASE_URL (or SESSIONDAG_OPENAI_BASE_URL) and/or OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY (or SESSIONDAG_ANTHROPIC_API_KEY) and/or ANTHROPIC_BASE_URL",
}


def env_config(kind: str, settings: Settings) -> dict[str, Any]:
    """A built-in kind configured from the settings (agent.openai_base_url … ; docs/settings.md)."""
    if kind == "scripted":
        return {"provider": "scripted", "script": settings.script}
    if kind not in WHAT:
        raise ProviderError(f"unknown provider {kind!r}")
    what = WHAT[kind]
    cfg = {"provider": kind, "base_url": getattr(settings, f"{kind}_base_url"),
           "api_key": getattr(settings, f"{kind}_api_key")}
    if not cfg["base_url"] and not cfg["api_key"]:
        raise ProviderError(f"the {kind} provider needs an endpoint or a key: set {what}")
    return cfg


def resolve(name: str, settings: Settings) -> dict[str, Any]:
    """The make_provider config for a profile or a built-in kind."""
    profiles = load_profiles(settings)
    if name in profiles:
        p = profiles[name]
        cfg: dict[str, Any] = {"provider": p["kind"]}
        if p["kind"] != "scripted":
            cfg.update(env_config(p["kind"], settings) if not p.get("base_url") and not (
                p.get("api_key_env") or p.get("api_key_command")) else {})
            if p.get("base_url"):
                cfg["base_url"] = p["base_url"]
            key = _api_key(name, p, settings)
            if key is not None:
                cfg["api_key"] = key
        for k in ("model", "timeout", "deadline", "max_retries", "temperature", "max_tokens", "headers", "script"):
            if p.get(k) is not None:
                cfg[k] = p[k]
        if "script" in cfg and p["kind"] != "scripted":
            raise ProviderError(f"provider profile {name!r}: 'script' is for kind = \"scripted\" only")
        return cfg
    if name in KINDS:
        return env_config(name, settings)
    known = sorted(set(KINDS) | set(profiles))
    raise ProviderError(f"unknown provider {name!r}; expected one of {', '.join(known)} "
                        f"(profiles live in {settings.config_file or 'the config file'})")
