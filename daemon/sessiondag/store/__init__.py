"""The persistence edge: durable journal, git snapshots, sessions and handles."""

from . import events
from .handles import SessionStore, default_state_dir
from .session_handle import SessionHandle
from .session import Session, is_journal_path

__all__ = ["SessionHandle", "SessionStore", "Session", "default_state_dir", "events", "is_journal_path"]
