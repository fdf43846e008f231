# The CLI helper's part: `make bench` also measures the fan-out of a running turn to 10 watchers.
EXTRA_BENCH += bench-cli

.PHONY: bench-cli
bench-cli: $(STAMP)
	$(BIN)/python bench/fanout_bench.py

# the native Anthropic provider (runtime/providers/anthropic_native.py) and its tests
PIP_EXTRAS += anthropic
