# Write-path safeguards of the store (issue #8): their cost beside the append and commit they guard.
EXTRA_BENCH += bench-write-path

bench-write-path: install
	$(BIN)/python bench/write_path_bench.py
.PHONY: bench-write-path
