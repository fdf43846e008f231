"""Permission policies: callables (kind: "write" | "run" | "mcp", detail: dict) -> bool.

An MCP tool call (kind "mcp", detail.tool = "mcp:<server>/<tool>") is allowed by `mcp` (every MCP
tool), `mcp:<server>` (that server's tools) or `mcp:<server>/<tool>` (that one), or `all`."""

from __future__ import annotations

from typing import Callable, Mapping

from ..core.settings import Settings

Permissions = Callable[[str, Mapping[str, object]], bool]
"""A policy: (kind, detail: the path, command or MCP tool asked for) -> allowed."""


def env_permissions(settings: Settings) -> Permissions:
    """Permission policy of the setting agent.allow ($SESSIONDAG_ALLOW: comma list of write,run,all);
    default: refuse."""
    return allow_policy(set(settings.allow))


def allow_policy(allowed: set[str] | frozenset[str]) -> Permissions:
    allowed = frozenset(allowed)

    def policy(kind: str, detail: Mapping[str, object]) -> bool:
        if kind in allowed or "all" in allowed:
            return True
        if kind == "mcp":
            tool = str(detail.get("tool") or "")
            return tool in allowed or tool.partition("/")[0] in allowed
        return False
    policy.allowed = allowed  # type: ignore[attr-defined]
    return policy
