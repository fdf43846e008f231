PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Optional parts (editors, ACP, framework adapters) live in mk/*.mk. Each fragment may add
# pip extras (PIP_EXTRAS += name), test targets (EXTRA_TESTS += test-x) and bench targets
# (EXTRA_BENCH += bench-x) and things the Python suite needs installed first (TEST_DEPS += file);
# the core targets below stay the same.
PIP_EXTRAS := test openai
TEST_DEPS :=
EXTRA_TESTS :=
EXTRA_BENCH :=
include $(sort $(wildcard mk/*.mk))

comma := ,
empty :=
space := $(empty) $(empty)
EXTRAS := $(subst $(space),$(comma),$(strip $(PIP_EXTRAS)))
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)-$(EXTRAS)

.PHONY: install test test-py test-fast test-setup demo bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

test: test-py $(EXTRA_TESTS)

test-py: $(STAMP) $(TEST_DEPS)
	$(BIN)/python -m pytest -q -p no:cacheprovider

# the unit and in-process tests only: no child process, no network, no editor, no root (tests/tiers.py);
# under a minute, for the edit-test loop. `make test` stays the whole suite (what CI runs).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --tier=fast

# everything the suite needs installed (a set-up failure of a test names the part's own target)
test-setup: $(STAMP) $(TEST_DEPS)

demo: $(STAMP)
	$(BIN)/sessiondag demo

bench: $(STAMP) $(EXTRA_BENCH)
	$(BIN)/pip install -q -e '.[$(EXTRAS),bench]'
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV)
