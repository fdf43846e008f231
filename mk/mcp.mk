# MCP servers in the agent runtime (docs/mcp.md): the official `mcp` Python SDK comes with the `mcp`
# pip extra; the reference filesystem server that tests/mcp/test_mcp_reference.py drives comes from
# npm (locked in tests/mcp/npm/package-lock.json); node/npm from Debian when missing.
PIP_EXTRAS += mcp

MCP_NPM := tests/mcp/npm

$(MCP_NPM)/node_modules/.installed: $(MCP_NPM)/package.json $(MCP_NPM)/package-lock.json
	command -v node >/dev/null && command -v npm >/dev/null || \
	  (apt-get update -q && apt-get install -y -q nodejs npm)
	cd $(MCP_NPM) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

.PHONY: mcp-install
mcp-install: $(MCP_NPM)/node_modules/.installed

install: mcp-install
TEST_DEPS += $(MCP_NPM)/node_modules/.installed
