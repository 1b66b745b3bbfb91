"""Issue 18, speed, as browser tests (the full figures come from
`bench_first_paint.py`, see BENCHMARKS.md): with 1,000 sessions in the
organization the sessions list is on screen within 300 ms of navigation
(median of five signed-in loads), and the open session view shows every
delta of a turn streaming 200 a second."""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_first_paint import OBSERVER, RECORDER
from browser import assistant_text, open_session, sign_in, turn_status, wait
from conftest import Api, Model


def test_the_sessions_list_paints_within_300_ms_with_1000_sessions(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: api.session(), range(1000)))
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
    sign_in(browser, url, api.key)
    listed = []
    for _ in range(5):
        browser.get(f"{url}/console/")
        wait(browser, lambda b: b.execute_script("return window.__bench && window.__bench.listed"))
        listed.append(browser.execute_script("return window.__bench.listed"))
        assert browser.execute_script("return window.__bench.rows") == 20
    assert statistics.median(listed) <= 300, listed
    browser.save_screenshot(str(tmp_path / "listed.png"))


def test_the_session_view_shows_every_delta_at_200_a_second(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session()
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    browser.execute_script(RECORDER)
    chunks = 1000
    text = "".join(f"{i:05d} " for i in range(chunks))
    model.script({"type": "reply", "text": text, "chunks": chunks, "chunk_delay_ms": 3})
    started = time.monotonic()
    turn_id = api.send(session["id"], "stream")
    wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=60)
    elapsed = time.monotonic() - started
    streamed = browser.execute_script("return window.__streamed")
    assert streamed == text, f"built {len(streamed or '')} of {len(text)} characters from the deltas"
    assert chunks / elapsed >= 150, f"{chunks / elapsed:.0f} deltas/s: the stream was not fast enough to prove much"
    assert assistant_text(browser, turn_id).rstrip() == text.rstrip()
    browser.save_screenshot(str(tmp_path / "streamed.png"))
