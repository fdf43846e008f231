# The official Open-RPC tools check rpc_schema/ (tests/rpc/test_openrpc_official.py).
OPENRPC_CHECK := tests/openrpc
TEST_DEPS += $(OPENRPC_CHECK)/node_modules/.installed

.PHONY: openrpc-install
openrpc-install: $(OPENRPC_CHECK)/node_modules/.installed

$(OPENRPC_CHECK)/node_modules/.installed: $(OPENRPC_CHECK)/package-lock.json
	@command -v npm >/dev/null || { echo "set-up: npm (Node.js) is needed for the Open-RPC check" >&2; exit 1; }
	cd $(OPENRPC_CHECK) && npm ci --no-audit --no-fund --loglevel=error
	touch $@
