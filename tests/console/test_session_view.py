"""Issue 18, the session view in a real browser: artifacts with download, MCP
approvals answered from the page, `mcp_call` items against a real MCP server
(the reference `server-everything`), and a session longer than one page of
history (Load older)."""

from __future__ import annotations

import time
from pathlib import Path

from selenium.webdriver.common.by import By

from browser import assistant_text, error_text, open_session, sign_in, turn_status, wait
from conftest import Api, Model


def test_an_artifact_is_listed_and_downloads(browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    session = api.session({"type": "openai_hosted"})
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    wait(browser, lambda b: b.find_element(By.ID, "artifacts-note").text == "no artifacts")
    command = "printf 'report <b>body</b>\\n' > \"$REBYTE_OUTPUT_DIR/report.txt\""
    model.script(
        {"type": "reply", "text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
        {"type": "reply", "text": "written"},
    )
    turn_id = api.send(session["id"], "write a report")
    wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=60)
    row = "#artifacts li.artifact"
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, row))
    (artifact,) = api.ok("GET", f"/v1/agents/sessions/{session['id']}/artifacts")["data"]
    assert artifact["path"].endswith("/report.txt")
    assert [e.find_element(By.CSS_SELECTOR, ".path").text for e in browser.find_elements(By.CSS_SELECTOR, row)] == [artifact["path"]]
    assert browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-artifact-id") == artifact["id"]
    assert f"{artifact['size_bytes']} bytes" in browser.find_element(By.CSS_SELECTOR, row).text
    browser.save_screenshot(str(tmp_path / "artifact.png"))
    browser.find_element(By.CSS_SELECTOR, f"{row} button.download").click()
    saved = downloads / "report.txt"
    wait(browser, lambda b: saved.exists() and saved.read_bytes() == b"report <b>body</b>\n")
    assert api.key not in browser.current_url
    assert error_text(browser) == ""


ECHO = {"server": "everything", "name": "echo", "arguments": {"message": "hi <img src=x onerror=window.pwned=1>"}}


def mcp_session(api: Api, everything: str, require_approval: str = "never") -> dict:
    tool = {
        "type": "mcp", "server_label": "everything", "required": True,
        "transport": {"type": "http", "server_url": everything}, "require_approval": require_approval,
    }
    return api.session(tools=[tool])


def mcp_call(browser, turn_id: str):
    found = browser.find_elements(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] .item[data-type="mcp_call"]')
    return found[0] if found else None


def test_an_mcp_call_shows_its_arguments_and_output(
    browser, url: str, model: Model, org: tuple[str, Api], everything: str, tmp_path: Path
):
    _, api = org
    session = mcp_session(api, everything)
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "c1", "name": "call_tool", "arguments": ECHO}]}, {"type": "reply", "text": "Echoed."})
    turn_id = api.send(session["id"], "echo")
    wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=30)
    item = mcp_call(browser, turn_id)
    assert item is not None
    assert item.find_element(By.CSS_SELECTOR, ".label").text == "mcp_call everything.echo (completed)"
    assert '"message": "hi <img src=x onerror=window.pwned=1>"' in item.find_element(By.CSS_SELECTOR, "pre.arguments").text
    assert item.find_element(By.CSS_SELECTOR, "pre.output").text == "Echo: hi <img src=x onerror=window.pwned=1>"
    assert browser.find_elements(By.CSS_SELECTOR, "#turns img") == []
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    # A call of a tool the server lacks fails: its error shows.
    missing = {"server": "everything", "name": "no-such-tool", "arguments": {}}
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "c2", "name": "call_tool", "arguments": missing}]}, {"type": "reply", "text": "No."})
    second = api.send(session["id"], "call what is not there")
    wait(browser, lambda b: turn_status(b, second) == "completed", timeout=30)
    stored = [i for i in api.ok("GET", f"/v1/agents/sessions/{session['id']}/items?order=asc")["data"] if i["type"] == "mcp_call"]
    assert [c["status"] for c in stored] == ["completed", "failed"]
    failed = mcp_call(browser, second)
    assert failed.find_element(By.CSS_SELECTOR, ".label").text == "mcp_call everything.no-such-tool (failed)"
    assert failed.find_element(By.CSS_SELECTOR, "pre.error").text == stored[1]["error"]
    assert "no-such-tool" in stored[1]["error"]
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "mcp-call.png"))


def approval(browser, turn_id: str):
    found = browser.find_elements(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] .approval')
    return found[0] if found else None


def test_an_mcp_approval_is_answered_from_the_page(
    browser, url: str, model: Model, org: tuple[str, Api], everything: str, tmp_path: Path
):
    _, api = org
    session = mcp_session(api, everything, "always")
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "c3", "name": "call_tool", "arguments": ECHO}]}, {"type": "reply", "text": "Done."})
    turn_id = api.send(session["id"], "echo, once approved")
    wait(browser, lambda b: approval(b, turn_id) is not None, timeout=30)
    box = approval(browser, turn_id)
    (action,) = api.ok("GET", f"/v1/agents/sessions/{session['id']}")["required_actions"]
    assert box.get_attribute("data-request-id") == action["request_id"]
    assert box.find_element(By.CSS_SELECTOR, ".label").text.startswith("approval requested: everything.echo")
    assert "hi <img src=x" in box.find_element(By.CSS_SELECTOR, "pre.arguments").text
    assert turn_status(browser, turn_id) == "waiting"
    browser.save_screenshot(str(tmp_path / "asking.png"))
    box.find_element(By.CSS_SELECTOR, "button.approve").click()
    wait(browser, lambda b: turn_status(b, turn_id) == "completed", timeout=30)
    wait(browser, lambda b: approval(b, turn_id) is None)
    item = mcp_call(browser, turn_id)
    assert item.find_element(By.CSS_SELECTOR, "pre.output").text == "Echo: hi <img src=x onerror=window.pwned=1>"
    assert "Done." in assistant_text(browser, turn_id)
    # Denied: the call does not run and its error says so.
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "c4", "name": "call_tool", "arguments": ECHO}]}, {"type": "reply", "text": "Refused."})
    second = api.send(session["id"], "echo again")
    wait(browser, lambda b: approval(b, second) is not None, timeout=30)
    approval(browser, second).find_element(By.CSS_SELECTOR, "button.deny").click()
    wait(browser, lambda b: turn_status(b, second) == "completed", timeout=30)
    denied = mcp_call(browser, second)
    assert "(failed)" in denied.find_element(By.CSS_SELECTOR, ".label").text
    assert "denied" in denied.find_element(By.CSS_SELECTOR, "pre.error").text
    assert denied.find_elements(By.CSS_SELECTOR, "pre.output") == []
    assert api.ok("GET", f"/v1/agents/sessions/{session['id']}")["required_actions"] == []
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "answered.png"))


def test_a_read_only_key_sees_a_403_when_approving(
    browser, url: str, model: Model, admin: Api, org: tuple[str, Api], everything: str, tmp_path: Path
):
    org_id, api = org
    session = mcp_session(api, everything, "always")
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "c5", "name": "call_tool", "arguments": ECHO}]}, {"type": "reply", "text": "Done."})
    turn_id = api.send(session["id"], "echo")
    sign_in(browser, url, admin.key_of(org_id, ["tasks:read"]).key)
    open_session(browser, session["id"])
    wait(browser, lambda b: approval(b, turn_id) is not None, timeout=30)
    approval(browser, turn_id).find_element(By.CSS_SELECTOR, "button.approve").click()
    wait(browser, lambda b: error_text(b).startswith("403 permission_error: "))
    assert api.turn(session["id"], turn_id)["status"] == "waiting"
    assert approval(browser, turn_id).find_element(By.CSS_SELECTOR, "button.approve").is_enabled(), "may be tried again"
    browser.save_screenshot(str(tmp_path / "forbidden.png"))


def run_turns(api: Api, model: Model, session_id: str, n: int) -> list[str]:
    model.script({"type": "reply", "text": "answer", "repeat": n})
    ids = []
    for i in range(n):
        turn_id = api.send(session_id, f"question {i}")
        deadline = time.monotonic() + 30
        while api.turn(session_id, turn_id)["status"] != "completed":
            assert time.monotonic() < deadline, f"turn {i} did not complete"
            time.sleep(0.02)
        ids.append(turn_id)
    return ids


def test_a_long_session_shows_its_newest_turns_then_older_ones_on_demand(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session()
    ids = run_turns(api, model, session["id"], 120)  # 240 items: a user message and a reply each
    sign_in(browser, url, api.key)
    open_session(browser, session["id"])
    shown = lambda b: [e.get_attribute("data-turn-id") for e in b.find_elements(By.CSS_SELECTOR, "#turns .turn")]  # noqa: E731
    wait(browser, lambda b: shown(b) == ids[70:], timeout=30)  # the newest 100 items
    older = browser.find_element(By.ID, "older")
    assert older.is_displayed()
    browser.save_screenshot(str(tmp_path / "newest.png"))
    older.click()
    wait(browser, lambda b: shown(b) == ids[20:])
    browser.find_element(By.ID, "older").click()
    wait(browser, lambda b: shown(b) == ids)
    assert not browser.find_element(By.ID, "older").is_displayed()
    for i in (0, 55, 119):
        texts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, f'.turn[data-turn-id="{ids[i]}"] .item pre.text')]
        assert texts == [f"question {i}", "answer"], (i, texts)
        assert turn_status(browser, ids[i]) == "completed"
    # A new turn still goes to the bottom.
    model.script({"type": "reply", "text": "the newest"})
    last = api.send(session["id"], "one more")
    wait(browser, lambda b: shown(b) == ids + [last] and turn_status(b, last) == "completed")
    assert assistant_text(browser, last) == "the newest"
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "all.png"))
