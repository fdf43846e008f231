"""The OpenAI Agents SDK session store on sessiondag: `SessiondagSession`.

    from sessiondag.integrations.agents import SessiondagSession
    session = SessiondagSession("user-42", "~/.local/state/sessiondag")
    result = await Runner.run(agent, "hello", session=session)

Needs the `agents` extra (`pip install 'sessiondag[agents]'`). See docs/integrations.md.
"""

from .session import SessiondagSession

__all__ = ["SessiondagSession"]
