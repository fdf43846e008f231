# `make bench` also measures the fan-out of a running turn to 10 watchers.
EXTRA_BENCH += bench-fanout

.PHONY: bench-fanout
bench-fanout: $(STAMP)
	$(BIN)/python bench/fanout_bench.py

# the native Anthropic provider (runtime/providers/anthropic_native.py) and its tests
PIP_EXTRAS += anthropic
