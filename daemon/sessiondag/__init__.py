"""sessiondag: AI-agent sessions as a git-backed DAG, served over JSON-RPC.

The public library surface lives here; see docs/architecture.md for the layers.
"""

__version__ = "0.1.0"

from .core.model import Call, ROOT, ROLES, STATUSES, TERMINAL_STATUSES  # noqa: E402
from .core.errors import (  # noqa: E402
    SessionDagError,
    PredecessorMissingError,
    BrokenPredecessorChainError,
    InvalidSessionIdError,
    InvalidNodeError,
    NotFoundError,
    SessionExistsError,
    SessionResumeError,
    HeadMismatchError,
    WorkingDirUnboundError,
)
from .core.ids import check_session_id, derive_session_id, mint_session_id  # noqa: E402

__all__ = [
    "__version__", "Call", "ROOT", "ROLES", "STATUSES", "TERMINAL_STATUSES",
    "SessionDagError", "PredecessorMissingError", "BrokenPredecessorChainError",
    "InvalidSessionIdError", "InvalidNodeError", "NotFoundError", "SessionExistsError",
    "SessionResumeError", "HeadMismatchError", "WorkingDirUnboundError",
    "check_session_id", "derive_session_id", "mint_session_id",
]
