"""Issue 18, speed: the console's first paint with 1,000 sessions in the
organization while one of them streams a turn at 200 deltas per second, in
headless Chromium; then that session opened in the page, which must show
every delta (none dropped).

    cargo build -p rebyte --bins   # or --release, with REBYTE_BIN=$PWD/target/release/rebyte
    REBYTE_BIN=$PWD/target/debug/rebyte .venv-console/bin/python tests/console/bench_first_paint.py

Knobs: BENCH_SESSIONS (1000), BENCH_LOADS (30 page loads), BENCH_DELTAS_PER_S (200, the
stream's length: 30 s of them) and BENCH_CHUNK_DELAY_MS (3, the model's pause between deltas).

Measured per page load (the tab already signed in, as after a reload):
`first-contentful-paint` from the Paint Timing API, and "sessions listed":
the time from navigation start until the first page of sessions is in the
list (a MutationObserver installed before the page's own script, through
the DevTools protocol, so the console carries no benchmark code). The
stream's rate is measured by a separate reader of the session's event stream.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from conftest import BIN_DIR, CHROMEDRIVER, CHROMIUM, REPO_ROOT, Api, Model, Process, new_key, serve  # noqa: E402

SESSIONS = int(os.environ.get("BENCH_SESSIONS", "1000"))
LOADS = int(os.environ.get("BENCH_LOADS", "30"))
RATE = int(os.environ.get("BENCH_DELTAS_PER_S", "200"))
STREAM_S = 30  # long enough for every load and the session view
# The scripted model sleeps this long between deltas; its timer adds about a
# millisecond or two, so 3 ms gives the 200 a second asked for (measured, and printed).
VIEW_S = 10  # the turn the open session view follows
DELAY_MS = int(os.environ.get("BENCH_CHUNK_DELAY_MS", "3"))

OBSERVER = """
window.__bench = {};
new MutationObserver((_, obs) => {
  const list = document.getElementById("sessions");
  if (list && list.children.length && !window.__bench.listed) {
    window.__bench.listed = performance.now();
    window.__bench.rows = list.children.length;
    obs.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""


# Records the text the page built from deltas when the finished item replaces it.
RECORDER = """
window.__streamed = null;
new MutationObserver((records) => {
  for (const r of records) for (const n of r.removedNodes) {
    if (n.nodeType === 1 && n.matches("pre.text") && r.target.dataset.role === "assistant") window.__streamed = n.textContent;
  }
}).observe(document.getElementById("turns"), {childList: true, subtree: true});
"""


def wait_for(condition, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class DeltaCounter(threading.Thread):
    """Reads a session's event stream and counts text deltas as they arrive."""

    def __init__(self, url: str, key: str, session_id: str):
        super().__init__(daemon=True)
        self.req = urllib.request.Request(f"{url}/v1/agents/sessions/{session_id}/events")
        self.req.add_header("Authorization", f"Bearer {key}")
        self.times: list[float] = []

    def run(self) -> None:
        with urllib.request.urlopen(self.req, timeout=STREAM_S * 2) as resp:
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: ") and '"agent.session.turn.output_text.delta"' in line:
                    self.times.append(time.monotonic())
                elif line.startswith("data: ") and '"agent.session.turn.completed"' in line:
                    return

    def rate(self, since: float, until: float) -> float:
        n = sum(1 for t in self.times if since <= t <= until)
        return n / (until - since)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rebyte-console-bench-"))
    scripted = BIN_DIR / "scripted-model"
    if not scripted.exists():  # a release server, the debug model server
        scripted = REPO_ROOT / "target" / "debug" / "scripted-model"
    model_proc = Process([str(scripted), "--listen", "127.0.0.1:0"], "scripted model listening on", dict(os.environ), work / "model.log")
    key = new_key()
    server = serve(model_proc.url, work / "data", key)
    model = Model(model_proc.url)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"]:
        options.add_argument(arg)
    driver = None
    try:
        admin = Api(server.url, key)
        _, api = admin.org_key(["tasks:read", "tasks:write"])
        started = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: api.session(), range(SESSIONS - 1)))
        streaming = api.session()
        pages, after = 0, None
        while True:
            page = api.ok("GET", "/v1/agents/sessions?limit=100" + (f"&after={after}" if after else ""))
            pages += len(page["data"])
            if not page["has_more"]:
                break
            after = page["last_id"]
        assert pages == SESSIONS, pages
        print(f"{SESSIONS} sessions created in {time.monotonic() - started:.1f} s", flush=True)

        # One turn streaming RATE deltas a second for STREAM_S seconds.
        chunks = RATE * STREAM_S
        text = "".join(f"{i:05d} " for i in range(chunks))
        model.script({"type": "reply", "text": text, "chunks": chunks, "chunk_delay_ms": DELAY_MS})
        counter = DeltaCounter(server.url, api.key, streaming["id"])
        counter.start()
        turn_id = api.send(streaming["id"], "stream")
        time.sleep(2)  # the stream reaches its pace

        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
        driver.get(f"{server.url}/console/")
        driver.execute_script("sessionStorage.setItem('rebyte.key', arguments[0])", api.key)
        measured_from = time.monotonic()
        fcp, listed = [], []
        for _ in range(LOADS):
            driver.get(f"{server.url}/console/")
            deadline = time.monotonic() + 10
            while not driver.execute_script("return window.__bench && window.__bench.listed"):
                assert time.monotonic() < deadline, "the sessions list never showed"
                time.sleep(0.02)
            bench = driver.execute_script(
                "return {listed: window.__bench.listed, rows: window.__bench.rows,"
                " fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime}"
            )
            assert bench["rows"] == 20, bench
            listed.append(bench["listed"])
            if bench["fcp"] is not None:
                fcp.append(bench["fcp"])
        measured_until = time.monotonic()
        rate = counter.rate(measured_from, measured_until)

        # The streaming session opened in the page, then a second turn at the
        # same pace: the text built from its deltas (recorded as the finished
        # item replaces it) must be the whole text — no delta dropped.
        driver.execute_script("document.getElementById('sessions').querySelector(arguments[0]).click()",
                              f'button[data-session-id="{streaming["id"]}"]')
        while driver.find_element(By.ID, "stream-status").text != "live":
            time.sleep(0.02)
        status = lambda t: driver.execute_script(  # noqa: E731
            "const s = document.querySelector(arguments[0]); return s ? s.textContent : ''",
            f'.turn[data-turn-id="{t}"] .turn-status')
        wait_for(lambda: status(turn_id) == "completed", STREAM_S * 2, "the first turn did not complete")
        counter.join(10)
        view_chunks = RATE * VIEW_S
        view_text = "".join(f"{i:05d} " for i in range(view_chunks))
        model.script({"type": "reply", "text": view_text, "chunks": view_chunks, "chunk_delay_ms": DELAY_MS})
        driver.execute_script(RECORDER)
        view_counter = DeltaCounter(server.url, api.key, streaming["id"])
        view_counter.start()
        time.sleep(0.5)
        second = api.send(streaming["id"], "stream again")
        wait_for(lambda: status(second) == "completed", VIEW_S * 4, "the second turn did not complete")
        view_counter.join(10)
        streamed = driver.execute_script("return window.__streamed")
        view_rate = len(view_counter.times) / (view_counter.times[-1] - view_counter.times[0])
        result = {
            "sessions": SESSIONS,
            "loads": LOADS,
            "deltas_per_s_during_loads": round(rate, 1),
            "sessions_listed_ms": {"p50": round(statistics.median(listed), 1), "p95": round(pct(listed, 95), 1), "max": round(max(listed), 1)},
            "first_contentful_paint_ms": {"p50": round(statistics.median(fcp), 1), "p95": round(pct(fcp, 95), 1), "max": round(max(fcp), 1)} if fcp else None,
            "session_view_deltas": len(view_counter.times),
            "session_view_deltas_per_s": round(view_rate, 1),
            "session_view_built_from_deltas_complete": streamed == view_text,
        }
        print(json.dumps(result, indent=2))
        assert streamed == view_text, f"the page built {len(streamed or '')} of {len(view_text)} characters from deltas"
    finally:
        if driver is not None:
            driver.quit()
        server.stop()
        model_proc.stop()


if __name__ == "__main__":
    main()
