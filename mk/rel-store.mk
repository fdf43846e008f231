# Write-path safeguards of the store (issue #8): their cost beside the append and commit they guard.
EXTRA_BENCH += bench-rel-store

bench-rel-store: install
	$(BIN)/python bench/write_path_bench.py
.PHONY: bench-rel-store
