# The type checker: mypy (pinned in the `dev` extra), strict on the daemon's core/, store/, context/, rpc/,
# report/, acp/, workspace/, runtime/, cli/, integrations/ and sync/ and on the Python client (every module, none exempt), configured
# in pyproject.toml [tool.mypy].
# Incremental: its cache (.mypy_cache/) makes a re-run take a second or two.
PIP_EXTRAS += dev
EXTRA_TESTS += test-types

.PHONY: test-types
test-types: install
	$(BIN)/mypy
