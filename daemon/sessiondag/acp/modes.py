"""Session modes (`session/set_mode`): what the agent may do without asking, per ACP session.

- `ask` (the default): every tool that changes anything — write_file / edit_file, run_command, an
  MCP tool — asks the user each time (an "always" answer the user gave is still honoured);
- `auto-edit`: writes in the working dir (write_file, edit_file: confined to it by the tools) are
  allowed without asking; commands and MCP tools still ask;
- `plan`: nothing that changes anything: writes, commands and MCP tools are refused without asking
  (the model is told permission was denied), reading and searching work.

Read-only workspace tools (read_file, list_dir, search_text) never ask in any mode."""

from __future__ import annotations

from acp.schema import SessionMode, SessionModeState

MODES = {
    "ask": ("Ask", "Every tool that changes anything asks first."),
    "auto-edit": ("Auto-edit", "File edits in the working dir are allowed; commands and MCP tools ask."),
    "plan": ("Plan", "Read and search only: edits, commands and MCP tools are refused."),
}
DEFAULT = "ask"


def state(current: str) -> SessionModeState:
    return SessionModeState(current_mode_id=current,
                            available_modes=[SessionMode(id=k, name=n, description=d) for k, (n, d) in MODES.items()])


def decide(mode: str, kind: str) -> bool | None:
    """True: granted without asking; False: refused without asking; None: ask the user."""
    if mode == "plan":
        return False
    if mode == "auto-edit" and kind == "write":
        return True
    return None
