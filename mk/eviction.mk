# The daemon's bounded resources: what reopening an evicted session costs (bench/eviction_bench.py).
EXTRA_BENCH += bench-eviction

.PHONY: bench-eviction
bench-eviction: $(STAMP)
	$(BIN)/python bench/eviction_bench.py
