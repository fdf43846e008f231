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

.PHONY: install test test-py demo bench clean

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

demo: $(STAMP)
	$(BIN)/sessiondag demo

bench: $(STAMP) $(EXTRA_BENCH)
	$(BIN)/pip install -q -e '.[$(EXTRAS),bench]'
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV)
