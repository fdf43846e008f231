"""agent/* methods (agent/prompt, agent/cancel). Filled in by the runtime work (issue 5)."""
