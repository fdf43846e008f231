"""HTML report benchmark (report/, docs/report.md): export time, file size and first paint in Chromium
for sessions of 1k, 10k and 100k nodes (2k too: the issue's bar is < 5 MB and < 1 s first paint),
and the live viewer (`sessiondag view`) keeping up with a session of 2k, 10k and 100k nodes.

Sessions are synthetic (tests/report/report_support.py: turns of user, model call, tool call, model
call; a fork every 25 turns), written through the real store. Columns of the file:
  export s   build the document and the page from the loaded session (cold: a fresh store)
  MB         the HTML file
  paint ms   Chromium (headless, network off): navigation start to the first frame after the viewer
             drew the graph and HEAD's newest turns (window.sdPaintMs), median of 3 loads
Columns of the live viewer (a real `view` process, which starts the daemon; a real Chromium on its
URL; nodes appended by a daemon client with `session/append`, one at a time):
  start s    `view` started to its URL printed (the whole document built once)
  paint ms   the live page's first paint (as above)
  seen ms    a node's append answered (durable in the journal) to its row drawn in the open page
             (the page's own clock: window.sdSeen), median and max of APPENDS appends
  in page    of that, the patch's arrival in the page to the row drawn
  text ms    a turn through the daemon whose model (a loopback server) streams STREAMED pieces 50 ms
             apart: a piece flushed by the server to the text drawn in the page (every text patch;
             sessions up to STREAM_UP_TO nodes: the call sends the whole context to the server)

    python bench/report_bench.py [--quick] [--no-live] [--live-only]   (--quick: 1k and 2k only)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "report"))

from chromium import Browser  # noqa: E402
from held_model import HeldModel  # noqa: E402
from report_support import CLI, synthetic_session  # noqa: E402

from sessiondag.report import export_html  # noqa: E402
from sessiondag.store import SessionStore  # noqa: E402

SIZES = (1_000, 2_000, 10_000, 100_000)
LIVE_SIZES = (2_000, 10_000, 100_000)
APPENDS = 7
STREAMED = 40           # pieces of the streamed answer, 50 ms apart
STREAM_UP_TO = 10_000   # sessions whose whole context a model call may carry to the loopback server


def paint(browser: Browser, url: str, offline: bool = True) -> float:
    page = browser.page()
    try:
        if offline:
            page.offline()
        page.goto(url, ready="document.body && document.body.dataset.ready")
        ms = page.eval("window.sdPaintMs")
        page.send("Page.navigate", url="about:blank")
        return float(ms)
    finally:
        page.close()


def streamed(page, model: HeldModel, env: dict[str, str], home: Path, sid: str) -> list[float]:
    """Per text patch of one streamed answer: the model server's flush of the piece that completed
    the shown text → the text drawn in the page, ms."""
    run = subprocess.run(CLI + ["run", "--state-dir", str(home), "--session", sid, "--provider", "openai",
                                "--model", "held", "stream an answer"], env=env, cwd=home, capture_output=True,
                         text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"the streamed turn failed: {run.stderr}")
    shown = page.eval("Object.values(sdTextSeen).pop() || []")
    out = []
    for t, length in shown:
        sent = next((ts for ts, cum in model.sent if cum >= length), None)
        if sent is not None:
            out.append(float(t) - sent * 1000)
    return out


def live(browser: Browser, home: Path, sid: str, tmp: Path,
         model: HeldModel | None) -> tuple[float, float, list[tuple[float, float]], list[float]]:
    """(view start s, live first paint ms, per append: (answered → drawn ms, patch arrived → drawn ms),
    per streamed piece: flushed by the model server → drawn ms)."""
    import anyio
    from sessiondag_client import connect
    runtime = tmp / "rt"
    tmp.mkdir(parents=True, exist_ok=True)
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, SESSIONDAG_HOME=str(home), XDG_RUNTIME_DIR=str(runtime), XDG_CONFIG_HOME=str(tmp / "cfg"))
    if model is not None:
        env.update(SESSIONDAG_OPENAI_BASE_URL=model.base_url, SESSIONDAG_OPENAI_API_KEY="k")
    t0 = time.perf_counter()
    proc = subprocess.Popen(CLI + ["view", "--state-dir", str(home), sid, "--no-browser"], env=env, cwd=home,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"view did not start: {proc.stderr.read()}")
        started = time.perf_counter() - t0
        page = browser.page()
        try:
            page.goto(url, ready="document.body && document.body.dataset.ready")
            first = float(page.eval("window.sdPaintMs"))
            page.wait("document.getElementById('live-state').textContent.includes('live')", timeout=120)

            async def appends() -> list[float]:
                c = await connect(state_dir=str(home), auto_start=False, client_name="report bench")
                out = []
                try:
                    head = (await c.call("session/open", {"session_id": sid, "working_dir": str(home)}))["head_id"]
                    for i in range(APPENDS):
                        node, head = await c.append(sid, {"role": "user", "name": "user", "predecessor": head,
                                                          "output": f"appended {i} while the viewer is open"})
                        acked = time.time() * 1000
                        page.wait(f"sdSeen[{node.id!r}]", timeout=300)
                        seen, arrived = page.eval(f"[sdSeen[{node.id!r}], sdArrived[{node.id!r}]]")
                        out.append((float(seen) - acked, float(seen) - float(arrived)))
                        await anyio.sleep(0.3)
                finally:
                    await c.aclose()
                return out
            seen = anyio.run(appends)
            text = streamed(page, model, env, home, sid) if model is not None else []
            if page.console_errors:
                raise RuntimeError(f"the live page logged errors: {page.console_errors}")
        finally:
            page.close()
        return started, first, seen, text
    finally:
        proc.terminate()
        proc.wait(60)
        proc.stdout.close()
        proc.stderr.close()
        subprocess.run(CLI + ["daemon", "stop", "--state-dir", str(home)], env=env, capture_output=True, timeout=120)


def main(argv: list[str]) -> None:
    sizes = SIZES[:2] if "--quick" in argv else SIZES
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        browser = Browser(tmpd / "browser")
        try:
            if "--live-only" not in argv:
                print(f"{'nodes':>8} {'build s':>8} {'export s':>9} {'MB':>7} {'paint ms':>9}")
            homes: dict[int, tuple[Path, str]] = {}
            for n in sizes:
                home = tmpd / f"s{n}"
                home.mkdir()
                t0 = time.perf_counter()
                sid = synthetic_session(home, n // 4)
                built = time.perf_counter() - t0
                homes[n] = (home, sid)
                if "--live-only" in argv:
                    continue
                store = SessionStore(home)
                try:
                    t0 = time.perf_counter()
                    html = export_html(store.session(sid))
                    exported = time.perf_counter() - t0
                finally:
                    store.close()
                out = home / "report.html"
                out.write_text(html, encoding="utf-8")
                paints = [paint(browser, out.as_uri()) for _ in range(3)]
                size = out.stat().st_size / 1e6
                print(f"{n:>8} {built:>8.1f} {exported:>9.2f} {size:>7.2f} {statistics.median(paints):>9.0f}", flush=True)
            if "--no-live" in argv:
                return
            print(f"\nlive viewer\n{'nodes':>8} {'start s':>8} {'paint ms':>9} {'seen ms median':>15} {'max':>6} "
                  f"{'in page median':>15} {'max':>6} {'text ms median':>15} {'max':>6}")
            model = HeldModel([f"word{i} " for i in range(STREAMED)], [], gap=0.05)
            model.release.set()
            try:
                for n in LIVE_SIZES:
                    if n not in homes:
                        continue
                    home, sid = homes[n]
                    started, first, seen, text = live(browser, home, sid, tmpd / f"live{n}",
                                                      model if n <= STREAM_UP_TO else None)
                    total, page = [x for x, _ in seen], [y for _, y in seen]
                    tm = f"{statistics.median(text):>15.0f} {max(text):>6.0f}" if text else f"{'-':>15} {'-':>6}"
                    print(f"{n:>8} {started:>8.1f} {first:>9.0f} {statistics.median(total):>15.0f} {max(total):>6.0f} "
                          f"{statistics.median(page):>15.0f} {max(page):>6.0f} {tm}", flush=True)
            finally:
                model.close()
        finally:
            browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
