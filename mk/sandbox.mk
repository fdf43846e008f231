# run_command's OS sandbox (docs/security.md): Landlock in the kernel, else bubblewrap (Debian's
# `bubblewrap`). The tests drive both, so both must be here.
SANDBOX_BWRAP := /usr/bin/bwrap

$(SANDBOX_BWRAP):
	apt-get install -y -q bubblewrap || (apt-get update -q && apt-get install -y -q bubblewrap)

.PHONY: sandbox-install
sandbox-install: $(SANDBOX_BWRAP)
TEST_DEPS += $(SANDBOX_BWRAP)
