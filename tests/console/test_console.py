"""The web console in a real browser (headless Chromium): sign-in, sessions,
a turn streaming live into the open session, cancel, safe rendering of model
output, a clear 403 for a key that may not write, deleting a session,
answering a client function call, and an environment's setup log growing."""

from __future__ import annotations

from pathlib import Path

from selenium.webdriver.common.by import By

from browser import assistant_text, error_text, open_session, sign_in, turn_status, wait
from conftest import Api, Model


def test_sign_in_lists_the_sessions_newest_first(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    older, newer = api.session(), api.session()
    sign_in(browser, url, api.key)
    rows = [b.get_attribute("data-session-id") for b in browser.find_elements(By.CSS_SELECTOR, "#sessions button")]
    assert rows == [newer["id"], older["id"]]
    assert browser.execute_script("return sessionStorage.getItem('rebyte.key')") == api.key
    assert api.key not in browser.current_url
    assert browser.get_cookies() == []
    browser.save_screenshot(str(tmp_path / "signed-in.png"))


def test_a_wrong_key_is_refused_with_the_servers_error(browser, url: str, tmp_path: Path):
    browser.get(f"{url}/console/")
    wait(browser, lambda b: b.find_element(By.ID, "key").is_displayed())
    browser.find_element(By.ID, "key").send_keys("rbk_" + "x" * 40)
    browser.find_element(By.ID, "signin-button").click()
    wait(browser, lambda b: error_text(b).startswith("401 "))
    assert browser.find_element(By.ID, "signin").is_displayed()
    assert browser.execute_script("return sessionStorage.getItem('rebyte.key')") is None
    browser.save_screenshot(str(tmp_path / "refused.png"))


def test_a_turn_started_through_the_api_streams_into_the_open_session(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session()
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    text = "The console shows this answer as it streams, word by word."
    model.script({"type": "reply", "text": text, "chunks": 8, "chunk_delay_ms": 300})
    turn_id = api.send(session["id"], "Hello")
    # Part of the answer is on screen while the turn still runs.
    wait(browser, lambda b: 0 < len(assistant_text(b, turn_id)) < len(text) and turn_status(b, turn_id) == "in_progress")
    browser.save_screenshot(str(tmp_path / "streaming.png"))
    wait(browser, lambda b: turn_status(b, turn_id) == "completed")
    assert assistant_text(browser, turn_id) == text
    browser.save_screenshot(str(tmp_path / "completed.png"))


def test_cancel_from_the_console_ends_the_running_turn(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session()
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script({"type": "reply", "text": "a b c d e f g h i j k l m n o p", "chunks": 16, "chunk_delay_ms": 1000})
    turn_id = api.send(session["id"], "Take your time")
    wait(browser, lambda b: turn_status(b, turn_id) == "in_progress")
    browser.find_element(By.ID, "cancel").click()
    wait(browser, lambda b: turn_status(b, turn_id) == "cancelled")
    assert api.turn(session["id"], turn_id)["status"] == "cancelled"
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "cancelled.png"))


def test_markup_in_model_output_is_shown_as_text_and_never_runs(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session()
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    payload = "<img src=x onerror=window.pwned=1> <script>window.pwned=2</script>"
    model.script({"type": "reply", "text": payload, "chunks": 3})
    turn_id = api.send(session["id"], "Say something dangerous")
    wait(browser, lambda b: turn_status(b, turn_id) == "completed")
    assert assistant_text(browser, turn_id) == payload
    assert browser.find_elements(By.CSS_SELECTOR, "#turns img, #turns script") == []
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    # Reopened from the stored items (not the stream), still text.
    browser.refresh()
    wait(browser, lambda b: b.find_element(By.ID, "console").is_displayed())
    open_session(browser, session["id"])
    wait(browser, lambda b: assistant_text(b, turn_id) == payload)
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    browser.save_screenshot(str(tmp_path / "as-text.png"))


def test_a_key_without_tasks_write_sees_a_403_when_sending(
    browser, url: str, admin: Api, org: tuple[str, Api], tmp_path: Path
):
    org_id, api = org
    session = api.session()
    reader = admin.key_of(org_id, ["tasks:read"])
    sign_in(browser, url, reader.key)
    open_session(browser, session["id"])
    browser.find_element(By.ID, "message").send_keys("May I?")
    browser.find_element(By.ID, "send-button").click()
    wait(browser, lambda b: error_text(b).startswith("403 permission_error: "))
    assert "tasks:write" in error_text(browser)
    status, turns = api.call("GET", f"/v1/agents/sessions/{session['id']}/turns")
    assert status == 200 and turns["data"] == [], "nothing was sent"
    browser.save_screenshot(str(tmp_path / "forbidden.png"))


NOW_TOOL = {
    "type": "function",
    "name": "now",
    "description": "The current time",
    "parameters": {"type": "object", "properties": {}},
}


def test_a_client_function_call_shows_as_waiting_for_its_result(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session(tools=[NOW_TOOL])
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script({"type": "reply", "text": "Let me check.", "tool_calls": [{"id": "call_now_1", "name": "now", "arguments": {}}]})
    turn_id = api.send(session["id"], "What time is it?")
    call = f'.turn[data-turn-id="{turn_id}"] .item[data-type="function_call"] .label'
    wait(browser, lambda b: turn_status(b, turn_id) == "waiting")
    wait(browser, lambda b: "waiting for the client's result" in "".join(e.text for e in b.find_elements(By.CSS_SELECTOR, call)))
    assert "function_call now" in browser.find_element(By.CSS_SELECTOR, call).text
    assert browser.find_element(By.ID, "session-status").text == "requires_action"
    browser.save_screenshot(str(tmp_path / "waiting.png"))


def test_a_failed_turn_shows_its_error(browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    session = api.session()
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script({"type": "error", "status": 400, "body": '{"error":{"message":"bad <b>things</b>"}}'})
    turn_id = api.send(session["id"], "hi")
    wait(browser, lambda b: turn_status(b, turn_id) == "failed")
    error = browser.find_element(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] .turn-error')
    assert error.text.startswith("invalid_request: model 'gpt-test' failed: "), error.text
    assert "bad <b>things</b>" in error.text, "shown as text"
    browser.save_screenshot(str(tmp_path / "failed.png"))


def test_a_commands_output_grows_as_it_runs(browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    session = api.session({"type": "openai_hosted"})
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    command = "echo one; sleep 1; echo two; sleep 1; echo '<b>three</b>'"
    model.script(
        {"type": "reply", "text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
        {"type": "reply", "text": "done"},
    )
    turn_id = api.send(session["id"], "run it")
    output = f'.turn[data-turn-id="{turn_id}"] .item[data-type="command_execution"] pre.output'

    def shown(b) -> str:
        return "".join(e.text for e in b.find_elements(By.CSS_SELECTOR, output))

    wait(browser, lambda b: "one" in shown(b) and "three" not in shown(b), timeout=60)
    browser.save_screenshot(str(tmp_path / "running.png"))
    wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=60)
    assert shown(browser) == "one\ntwo\n<b>three</b>"
    command_line = browser.find_element(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] pre.command').text
    assert command_line == f"$ {command}"
    browser.save_screenshot(str(tmp_path / "completed.png"))


def test_the_event_stream_reconnects_after_the_server_restarts(
    browser, model: Model, tmp_path: Path
):
    """The page reconnects with Last-Event-ID: a turn that ran while it was
    away (the server back on the same address) still appears, whole."""
    import socket

    from conftest import new_key, serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    key, data = new_key(), tmp_path / "data"
    server = serve(model.url, data, key, listen=f"127.0.0.1:{port}")
    try:
        api = Api(server.url, key)
        session = api.session()
        sign_in(browser, server.url, key)
        open_session(browser, session["id"])
        server.proc.kill()  # a crash: the page's stream just drops
        server.stop()
        wait(browser, lambda b: b.find_element(By.ID, "stream-status").text == "reconnecting…")
        server = serve(model.url, data, key, listen=f"127.0.0.1:{port}")
        model.script({"type": "reply", "text": "Said while you were away."})
        turn_id = api.send(session["id"], "hello again")
        assert api.turn(session["id"], turn_id)["status"] in ("queued", "in_progress", "completed")
        wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=30)
        assert assistant_text(browser, turn_id) == "Said while you were away."
        wait(browser, lambda b: b.find_element(By.ID, "stream-status").text == "live")
        browser.save_screenshot(str(tmp_path / "reconnected.png"))
        # Now the page has seen events: it resumes after the last one (Last-Event-ID).
        server.proc.kill()
        server.stop()
        wait(browser, lambda b: b.find_element(By.ID, "stream-status").text == "reconnecting…")
        server = serve(model.url, data, key, listen=f"127.0.0.1:{port}")
        model.script({"type": "reply", "text": "And once more."})
        second = api.send(session["id"], "and again")
        wait(browser, lambda b: turn_status(b, second) == "completed", timeout=30)
        assert assistant_text(browser, second) == "And once more."
        assert assistant_text(browser, turn_id) == "Said while you were away.", "each text once"
        browser.save_screenshot(str(tmp_path / "resumed.png"))
    finally:
        server.stop()


def test_more_shows_the_next_page_of_sessions(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    ids = [api.session()["id"] for _ in range(21)]
    sign_in(browser, url, api.key)
    rows = lambda b: [e.get_attribute("data-session-id") for e in b.find_elements(By.CSS_SELECTOR, "#sessions button")]  # noqa: E731
    assert rows(browser) == ids[::-1][:20], "a page of 20, newest first"
    more = browser.find_element(By.ID, "more")
    assert more.is_displayed()
    more.click()
    wait(browser, lambda b: len(rows(b)) == 21)
    assert rows(browser) == ids[::-1]
    assert not browser.find_element(By.ID, "more").is_displayed()
    browser.save_screenshot(str(tmp_path / "more.png"))


def test_delete_asks_then_removes_the_session(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    keep, doomed = api.session(), api.session()
    sign_in(browser, url, api.key)
    open_session(browser, doomed["id"])
    button = browser.find_element(By.ID, "delete")
    button.click()
    wait(browser, lambda b: b.find_element(By.ID, "delete").text == "Confirm delete")
    assert api.call("GET", f"/v1/agents/sessions/{doomed['id']}")[0] == 200, "one click only asks"
    browser.save_screenshot(str(tmp_path / "confirm.png"))
    browser.find_element(By.ID, "delete").click()
    rows = lambda b: [e.get_attribute("data-session-id") for e in b.find_elements(By.CSS_SELECTOR, "#sessions button")]  # noqa: E731
    wait(browser, lambda b: not b.find_element(By.ID, "session").is_displayed() and rows(b) == [keep["id"]])
    assert api.call("GET", f"/v1/agents/sessions/{doomed['id']}")[0] == 404
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "deleted.png"))


def test_the_page_answers_a_waiting_function_call_and_the_turn_goes_on(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session(tools=[NOW_TOOL])
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script(
        {"type": "reply", "text": "Let me check.", "tool_calls": [{"id": "call_now_2", "name": "now", "arguments": {}}]},
        {"type": "reply", "text": "It is noon."},
    )
    turn_id = api.send(session["id"], "What time is it?")
    form = f'.turn[data-turn-id="{turn_id}"] .item[data-type="function_call"] form.tool-result'
    wait(browser, lambda b: turn_status(b, turn_id) == "waiting" and b.find_elements(By.CSS_SELECTOR, form))
    browser.find_element(By.CSS_SELECTOR, f"{form} input").send_keys("2026-12-04T12:00:00Z")
    browser.save_screenshot(str(tmp_path / "answering.png"))
    browser.find_element(By.CSS_SELECTOR, f"{form} button").click()
    wait(browser, lambda b: turn_status(b, turn_id) == "completed")
    wait(browser, lambda b: "It is noon." in assistant_text(b, turn_id))
    assert browser.find_elements(By.CSS_SELECTOR, form) == [], "answered: no box any more"
    assert error_text(browser) == ""
    items = api.ok("GET", f"/v1/agents/sessions/{session['id']}/items?order=asc")["data"]
    outputs = [i for i in items if i["type"] == "function_call_output"]
    assert [(o["call_id"], o["output"]) for o in outputs] == [("call_now_2", "2026-12-04T12:00:00Z")]
    browser.save_screenshot(str(tmp_path / "answered.png"))


SETUP = "for i in 1 2 3; do echo line$i; sleep 1; done"


def test_an_environments_setup_log_grows_on_screen_until_ready(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    import base64
    import threading

    _, api = org
    older = api.ok("POST", "/v1/agents/environments", {"environment": {"type": "openai_hosted"}})
    env = api.ok(
        "POST", "/v1/agents/environments", {"environment": {"type": "openai_hosted", "setup_commands": [{"command": SETUP}]}}
    )
    sign_in(browser, url, api.key)
    browser.find_element(By.ID, "tab-environments").click()
    rows = lambda b: [e.get_attribute("data-environment-id") for e in b.find_elements(By.CSS_SELECTOR, "#environments button")]  # noqa: E731
    wait(browser, lambda b: rows(b) == [env["id"], older["id"]])
    assert not browser.find_element(By.ID, "sessions").is_displayed()
    browser.find_element(By.CSS_SELECTOR, f'#environments button[data-environment-id="{env["id"]}"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "environment-status").text == "pending")
    # A file written into it is its first use: setup runs (the write answers once it is done).
    data = base64.b64encode(b"hello").decode()
    body = {"type": "inline", "path": "/workspace/a.txt", "data": data}
    write = threading.Thread(target=lambda: api.ok("POST", f"/v1/agents/environments/{env['id']}/files", body))
    write.start()
    log = lambda b: b.find_element(By.ID, "environment-log").text  # noqa: E731
    try:
        wait(browser, lambda b: "line1" in log(b) and "line3" not in log(b), timeout=60)
        assert browser.find_element(By.ID, "environment-status").text == "pending"
        assert "setup running" in browser.find_element(By.ID, "environment-setup").text
        browser.save_screenshot(str(tmp_path / "setting-up.png"))
        wait(browser, lambda b: b.find_element(By.ID, "environment-status").text == "ready", timeout=60)
    finally:
        write.join(60)
    assert log(browser) == f"$ {SETUP}\nline1\nline2\nline3"
    assert browser.find_element(By.ID, "environment-setup").text == "setup completed: 1 of 1 steps"
    row = f'#environments button[data-environment-id="{env["id"]}"] .status'
    assert browser.find_element(By.CSS_SELECTOR, row).text == "ready"
    files = lambda b: [e.text for e in b.find_elements(By.CSS_SELECTOR, "#environment-files li")]  # noqa: E731
    wait(browser, lambda b: "/workspace/a.txt (5 bytes)" in files(b))
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "ready.png"))


def test_no_console_module_uses_a_markup_or_code_sink():
    """Every value is rendered with textContent: no module of the console
    writes markup (innerHTML and the like) or runs strings as code."""
    import re

    from conftest import REPO_ROOT

    sinks = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(\s*[\"'`]")
    modules = sorted((REPO_ROOT / "console").glob("*.js"))
    assert len(modules) >= 7
    for module in modules:
        found = sinks.findall(module.read_text())
        assert found == [], f"{module.name}: {found}"
