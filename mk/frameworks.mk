# Framework adapters: sessiondag as LangGraph's checkpointer and the OpenAI Agents SDK's session store.
# Their tests (tests/integrations/) run in the main pytest suite; the bench compares against the
# frameworks' own SQLite stores.
PIP_EXTRAS += langgraph agents
EXTRA_BENCH += bench-frameworks

.PHONY: bench-frameworks
bench-frameworks: install
	$(BIN)/python bench/frameworks_bench.py
