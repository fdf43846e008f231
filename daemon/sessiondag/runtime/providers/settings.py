"""Provider profiles from the settings file, and the built-in provider kinds' environment defaults.

    $XDG_CONFIG_HOME/sessiondag/config.toml   (else ~/.config/sessiondag/config.toml;
                                               $SESSIONDAG_CONFIG names another file)

    [providers.work]
    kind = "openai"                    # scripted | openai | anthropic
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-coder"
    api_key_env = "WORK_LLM_KEY"       # or api_key_command = "pass show llm/work" (first line of stdout)
    timeout = 60                       # seconds per request
    max_retries = 3                    # 429 / 5xx / connection errors, backoff with jitter, Retry-After honoured
    temperature = 0.2
    max_tokens = 4096
    headers = { "X-Team" = "infra" }

A profile name is accepted wherever a provider is (`--provider work`, `agent/prompt` {provider:
"work"}). A bad file or profile is an error naming it, never a silent fallback.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tomllib
from typing import Any

from .base import ProviderError

KINDS = ("scripted", "openai", "anthropic")
PROFILE_KEYS = {"kind", "base_url", "model", "api_key_env", "api_key_command", "timeout", "max_retries",
                "temperature", "max_tokens", "headers", "script"}


def config_path() -> str:
    explicit = os.environ.get("SESSIONDAG_CONFIG")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "sessiondag", "config.toml")


def load_settings(path: str | None = None) -> dict[str, Any]:
    """The whole settings file ({} when there is none); a broken one is an error naming it."""
    path = path or config_path()
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ProviderError(f"settings file {path}: {e}") from None


def load_profiles(path: str | None = None) -> dict[str, dict[str, Any]]:
    path = path or config_path()
    profiles = load_settings(path).get("providers", {})
    if not isinstance(profiles, dict):
        raise ProviderError(f"settings file {path}: [providers] must be a table of profiles")
    for name, p in profiles.items():
        if not isinstance(p, dict):
            raise ProviderError(f"settings file {path}: [providers.{name}] must be a table")
        unknown = set(p) - PROFILE_KEYS
        if unknown:
            raise ProviderError(f"settings file {path}: [providers.{name}] has unknown keys {sorted(unknown)}")
        if p.get("kind") not in KINDS:
            raise ProviderError(f"settings file {path}: [providers.{name}] kind must be one of {', '.join(KINDS)}")
    return profiles


def _api_key(name: str, p: dict[str, Any]) -> str | None:
    if p.get("api_key_env"):
        key = os.environ.get(p["api_key_env"])
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


ENV = {  # kind -> (base URL variables, key variables, what to set)
    "openai": (("SESSIONDAG_OPENAI_BASE_URL", "OPENAI_BASE_URL"), ("SESSIONDAG_OPENAI_API_KEY", "OPENAI_API_KEY"),
               "OPENAI_BASE_URL (or SESSIONDAG_OPENAI_BASE_URL) and/or OPENAI_API_KEY"),
    "anthropic": (("SESSIONDAG_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
                  ("SESSIONDAG_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
                  "ANTHROPIC_API_KEY (or SESSIONDAG_ANTHROPIC_API_KEY) and/or ANTHROPIC_BASE_URL"),
}


def _first_env(names: tuple[str, ...]) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def env_config(kind: str) -> dict[str, Any]:
    """A built-in kind configured from the environment."""
    if kind == "scripted":
        return {"provider": "scripted", "script": os.environ.get("SESSIONDAG_SCRIPT")}
    if kind not in ENV:
        raise ProviderError(f"unknown provider {kind!r}")
    urls, keys, what = ENV[kind]
    cfg = {"provider": kind, "base_url": _first_env(urls), "api_key": _first_env(keys)}
    if not cfg["base_url"] and not cfg["api_key"]:
        raise ProviderError(f"the {kind} provider needs an endpoint or a key: set {what}")
    return cfg


def resolve(name: str) -> dict[str, Any]:
    """The make_provider config for a profile or a built-in kind."""
    profiles = load_profiles()
    if name in profiles:
        p = profiles[name]
        cfg: dict[str, Any] = {"provider": p["kind"]}
        if p["kind"] != "scripted":
            cfg.update(env_config(p["kind"]) if not p.get("base_url") and not (p.get("api_key_env") or
                                                                              p.get("api_key_command")) else {})
            if p.get("base_url"):
                cfg["base_url"] = p["base_url"]
            key = _api_key(name, p)
            if key is not None:
                cfg["api_key"] = key
        for k in ("model", "timeout", "max_retries", "temperature", "max_tokens", "headers", "script"):
            if p.get(k) is not None:
                cfg[k] = p[k]
        if "script" in cfg and p["kind"] != "scripted":
            raise ProviderError(f"provider profile {name!r}: 'script' is for kind = \"scripted\" only")
        return cfg
    if name in KINDS:
        return env_config(name)
    known = sorted(set(KINDS) | set(profiles))
    raise ProviderError(f"unknown provider {name!r}; expected one of {', '.join(known)} "
                        f"(profiles live in {config_path()})")
