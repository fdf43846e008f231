"""The persistence edge: durable journal, git snapshots, sessions and handles."""

from .handles import SessionHandle, SessionStore, default_state_dir
from .session import Session

__all__ = ["SessionHandle", "SessionStore", "Session", "default_state_dir"]
