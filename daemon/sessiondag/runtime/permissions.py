"""Permission policies: callables (kind: "write" | "run", detail: dict) -> bool."""

from __future__ import annotations

from typing import Callable

from ..core.settings_source import current as current_settings

Permissions = Callable[[str, dict], bool]


def env_permissions() -> Permissions:
    """Permission policy of the setting agent.allow ($SESSIONDAG_ALLOW: comma list of write,run,all);
    default: refuse."""
    return allow_policy(set(current_settings().allow))


def allow_policy(allowed: set[str] | frozenset[str]) -> Permissions:
    allowed = frozenset(allowed)

    def policy(kind: str, detail: dict) -> bool:
        return kind in allowed or "all" in allowed
    policy.allowed = allowed  # type: ignore[attr-defined]
    return policy
