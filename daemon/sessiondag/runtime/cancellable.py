"""What a tool's body uses of the Runtime that runs it (runtime/runtime.py's Runtime is one): the
run's cancellation and the permission check. A Protocol, since the tools sit below the Runtime
and a type-only import of it would be an import cycle (tests/layer_rules.py counts it)."""

from __future__ import annotations

from typing import Protocol


class Cancellable(Protocol):
    def cancelled(self) -> bool: ...

    def check_cancelled(self) -> None:
        """Raise RunCancelled once the run is cancelled."""


class ToolHost(Cancellable, Protocol):
    def require_permission(self, kind: str, detail: dict[str, object]) -> None:
        """Raise PermissionDeniedError unless the run's permissions allow `kind` ("write", "run" …)."""
