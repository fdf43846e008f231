"""HTML report benchmark (report/, docs/report.md): export time, file size and first paint in Chromium
for sessions of 1k, 10k and 100k nodes (2k too: the issue's bar is < 5 MB and < 1 s first paint).

Sessions are synthetic (tests/report/report_support.py: turns of user, model call, tool call, model
call; a fork every 25 turns), written through the real store. Columns:
  export s   build the document and the page from the loaded session (cold: a fresh store)
  MB         the HTML file
  paint ms   Chromium (headless, network off): navigation start to the first frame after the viewer
             drew the graph and HEAD's newest turns (window.sdPaintMs), median of 3 loads

    python bench/report_bench.py [--quick]      (--quick: 1k and 2k only)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "report"))

from chromium import Browser  # noqa: E402
from report_support import synthetic_session  # noqa: E402

from sessiondag.report import export_html  # noqa: E402
from sessiondag.store import SessionStore  # noqa: E402

SIZES = (1_000, 2_000, 10_000, 100_000)


def main(argv: list[str]) -> None:
    sizes = SIZES[:2] if "--quick" in argv else SIZES
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        browser = Browser(tmpd / "browser")
        try:
            print(f"{'nodes':>8} {'build s':>8} {'export s':>9} {'MB':>7} {'paint ms':>9}")
            for n in sizes:
                home = tmpd / f"s{n}"
                home.mkdir()
                t0 = time.perf_counter()
                sid = synthetic_session(home, n // 4)
                built = time.perf_counter() - t0
                store = SessionStore(home)
                try:
                    t0 = time.perf_counter()
                    html = export_html(store.session(sid))
                    exported = time.perf_counter() - t0
                finally:
                    store.close()
                out = home / "report.html"
                out.write_text(html, encoding="utf-8")
                paints = []
                for _ in range(3):
                    page = browser.page()
                    try:
                        page.offline()
                        page.goto(out.as_uri(), ready="document.body && document.body.dataset.ready")
                        paints.append(page.eval("window.sdPaintMs"))
                        page.send("Page.navigate", url="about:blank")
                    finally:
                        page.close()
                size = out.stat().st_size / 1e6
                print(f"{n:>8} {built:>8.1f} {exported:>9.2f} {size:>7.2f} {statistics.median(paints):>9.0f}", flush=True)
        finally:
            browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
