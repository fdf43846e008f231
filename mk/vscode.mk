# The VS Code side: the TypeScript client (clients/typescript), the extension (editors/vscode) and its
# tests in a real VS Code (code-server 4.100.3) driven through Debian's chromium by playwright-core.
#
#   make vsix          editors/vscode/sessiondag-<version>.vsix (esbuild bundle, @vscode/vsce)
#   make test-vscode   client tests against a real daemon, extension unit tests, the browser test
#   make bench-vscode  activation, streaming latency, 2,000-node tree/graph timings, the empty-webview floor
#
# Everything comes from npm lockfiles and Debian packages; what is installed is stamped, so a second run
# installs nothing. Editors and browsers write only into temp dirs (the tests set XDG_* and code-server's
# --user-data-dir / --extensions-dir).

EXTRA_TESTS += test-vscode
EXTRA_BENCH += bench-vscode

VSC_TS := clients/typescript
VSC_EXT := editors/vscode
VSC_ENV := $(VSC_EXT)/test-env
VSC_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",/\1/p' $(VSC_EXT)/package.json)
VSIX := $(VSC_EXT)/sessiondag-$(VSC_VERSION).vsix
VSC_NPM_STAMP := $(VSC_EXT)/node_modules/.sessiondag-$(shell cat $(VSC_TS)/package-lock.json $(VSC_EXT)/package-lock.json | cksum | cut -d' ' -f1)
VSC_CS_STAMP := $(VSC_ENV)/node_modules/.sessiondag-$(shell cat $(VSC_ENV)/package-lock.json | cksum | cut -d' ' -f1)
VSC_APT_STAMP := $(VSC_ENV)/.apt-done
VSC_SOURCES := $(wildcard $(VSC_TS)/src/*.ts $(VSC_TS)/src/generated/*.ts $(VSC_EXT)/src/*.ts $(VSC_EXT)/src/model/*.ts \
	$(VSC_EXT)/media/* $(VSC_EXT)/scripts/*.mjs) $(VSC_EXT)/package.json $(VSC_EXT)/README.md

.PHONY: vsix test-vscode bench-vscode vscode-deps

vscode-node-check:
	@command -v node >/dev/null && command -v npm >/dev/null || \
		{ echo "set-up: node and npm are needed (Debian: apt-get install nodejs npm)"; exit 1; }
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || \
		{ echo "set-up: node >= 20 is needed for the TypeScript client and the extension"; exit 1; }
.PHONY: vscode-node-check

# npm packages of the client and the extension, from their lockfiles
$(VSC_NPM_STAMP): $(VSC_TS)/package-lock.json $(VSC_EXT)/package-lock.json | vscode-node-check
	cd $(VSC_TS) && npm ci --no-audit --no-fund --loglevel=error
	cd $(VSC_EXT) && npm ci --no-audit --no-fund --loglevel=error
	rm -f $(VSC_EXT)/node_modules/.sessiondag-*
	touch $@

vscode-deps: $(VSC_NPM_STAMP)

# Debian packages: chromium (the browser), ripgrep (pre-seeds code-server's ripgrep download),
# libkrb5-dev (a native module of code-server builds against it)
$(VSC_APT_STAMP):
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v rg >/dev/null || missing="$$missing ripgrep"; \
	dpkg -s libkrb5-dev >/dev/null 2>&1 || missing="$$missing libkrb5-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; } >/dev/null || \
			{ echo "set-up: apt-get install$$missing failed (needs root); the VS Code tests need them"; exit 1; }; \
	fi
	mkdir -p $(VSC_ENV) && touch $@

# code-server 4.100.3 (VS Code 1.100.3; newer ones need node 24), from its lockfile. Its install fetches
# ripgrep from outside the registries unless the cache already holds it: seed it with Debian's rg.
$(VSC_CS_STAMP): $(VSC_ENV)/package-lock.json $(VSC_APT_STAMP) | vscode-node-check
	@tmp=$$(mktemp -d) && mkdir -p $$tmp/vscode-ripgrep-cache-1.15.11 && \
	tar czf $$tmp/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz \
		-C $$(dirname $$(command -v rg)) rg && \
	cd $(VSC_ENV) && echo "installing code-server 4.100.3 (a few minutes, once)" && \
	TMPDIR=$$tmp npm_config_unsafe_perm=true npm_config_yes=true npm ci --no-audit --no-fund --loglevel=error; \
	status=$$?; rm -rf $$tmp; exit $$status
	rm -f $(VSC_ENV)/node_modules/.sessiondag-*
	touch $@

$(VSIX): $(VSC_NPM_STAMP) $(VSC_SOURCES)
	cd $(VSC_EXT) && npm run --silent vsix >/dev/null
	@echo "built $(VSIX)"

vsix: $(VSIX)

test-vscode: install $(VSIX) $(VSC_CS_STAMP)
	cd $(VSC_TS) && npx tsc -p . && SESSIONDAG_BIN=$(abspath $(BIN))/sessiondag node --test test/*.test.mjs
	cd $(VSC_EXT) && node --test test/model.test.mjs
	cd $(VSC_EXT) && SESSIONDAG_BIN=$(abspath $(BIN))/sessiondag node --test test/browser.test.mjs

bench-vscode: install $(VSIX) $(VSC_CS_STAMP)
	cd $(VSC_EXT) && SESSIONDAG_BIN=$(abspath $(BIN))/sessiondag node ../../bench/vscode_bench.mjs
