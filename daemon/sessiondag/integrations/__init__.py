"""sessiondag as the session store of agent frameworks.

- `sessiondag.integrations.langgraph`: `SessiondagSaver` / `AsyncSessiondagSaver`, LangGraph
  checkpointers (a thread is a session, a checkpoint is a node on its DAG).
- `sessiondag.integrations.agents`: `SessiondagSession`, an OpenAI Agents SDK `Session` (an item is
  a node; pop and clear are forks, never deletions).

A layer above the store: these modules use only the library API (docs/architecture.md) and import
their framework lazily, so `import sessiondag` never needs them. See docs/integrations.md.
"""
