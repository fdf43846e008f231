"""Typed errors of the runtime (each with a stable `code`, like core.errors)."""

from __future__ import annotations

from ..core.errors import PathRefusedError, SessionDagError

__all__ = ["RunCancelled", "AskUserUnavailableError", "PermissionDeniedError", "PathRefusedError",
           "SubprocessBodyError"]


class RunCancelled(SessionDagError):
    """The run was cancelled (agent/cancel, Ctrl-C, a stopped subprocess body). Nodes become `cancelled`."""

    code = "cancelled"


class AskUserUnavailableError(SessionDagError):
    """ask_user was called where no answer can be obtained (CI without an answers file)."""

    code = "ask_user_unavailable"

    def __init__(self, question: str, why: str):
        super().__init__(f"cannot ask the user {question!r}: {why}")
        self.question = question
        self.why = why

    def data(self) -> dict[str, object]:
        return {"question": self.question, "why": self.why}


class PermissionDeniedError(SessionDagError):
    """A write or run was refused by the permission policy or by the user."""

    code = "permission_denied"

    def __init__(self, kind: str, detail: str):
        super().__init__(f"permission to {kind} refused: {detail}")
        self.kind = kind
        self.detail = detail

    def data(self) -> dict[str, object]:
        return {"kind": self.kind, "detail": self.detail}


class SubprocessBodyError(SessionDagError):
    """A function body run in a subprocess failed; carries the child's error type and trace."""

    code = "subprocess_body_error"

    def __init__(self, type_name: str, message: str, trace: str = ""):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.trace = trace

    def data(self) -> dict[str, object]:
        return {"type": self.type_name, "trace": self.trace}
