# HTML reports (docs/report.md): their tests (tests/report) drive Debian's chromium over the DevTools
# protocol (the `websockets` package, test extra) and run with the Python suite; the same chromium as
# the VS Code tests (mk/vscode.mk installs it too). `make bench-report` measures export and first paint.
EXTRA_BENCH += bench-report

.PHONY: report-browser bench-report

report-browser:
	@[ -x /usr/bin/chromium ] || { echo "installing Debian's chromium for tests/report"; \
	  { $(SUDO_IF_NEEDED) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO_IF_NEEDED) apt-get install -y -q chromium; } \
	  >/dev/null || { echo "set-up: apt-get install chromium failed (needs root); tests/report need it"; exit 1; }; }

TEST_DEPS += report-browser

bench-report: install report-browser
	$(BIN)/python bench/report_bench.py
