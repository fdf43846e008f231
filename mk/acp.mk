# sessiondag acp: the Agent Client Protocol endpoint (docs/acp.md).
# The Python SDK comes with the `acp` pip extra; the official TypeScript SDK client that
# tests/acp/test_ts_client.py drives comes from npm (locked in tests/acp/ts_client/package-lock.json)
# and is installed before the Python suite runs.
PIP_EXTRAS += acp

ACP_TS := tests/acp/ts_client

$(ACP_TS)/node_modules/.installed: $(ACP_TS)/package.json $(ACP_TS)/package-lock.json
	command -v node >/dev/null && command -v npm >/dev/null || \
	  (apt-get update -q && apt-get install -y -q nodejs npm)
	cd $(ACP_TS) && npm ci --no-audit --no-fund
	touch $@

.PHONY: acp-install
acp-install: $(ACP_TS)/node_modules/.installed
TEST_DEPS += $(ACP_TS)/node_modules/.installed
install: acp-install

EXTRA_BENCH += bench-acp
.PHONY: bench-acp
bench-acp:
	$(BIN)/python bench/acp_bench.py
