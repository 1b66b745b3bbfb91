"""Issue 18, the console's other views in a real browser: an environment's
attached sessions, agents with their configuration and versions, the
overview from /metrics, and a sessions list that shows new sessions live."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from selenium.webdriver.common.by import By

from browser import error_text, open_session, rows, sign_in, turn_status, wait
from conftest import Api, Model


def test_an_environment_lists_its_sessions_and_each_opens(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    env = api.ok("POST", "/v1/agents/environments", {"environment": {"type": "openai_hosted"}})
    reference = {"type": "reference", "environment_id": env["id"]}
    first, elsewhere, second = api.session(reference), api.session(), api.session(reference)
    sign_in(browser, url, api.key)
    browser.find_element(By.ID, "tab-environments").click()
    wait(browser, lambda b: rows(b, "environments", "data-environment-id") == [env["id"]])
    browser.find_element(By.CSS_SELECTOR, f'#environments button[data-environment-id="{env["id"]}"]').click()
    attached = lambda b: rows(b, "environment-sessions", "data-session-id")  # noqa: E731
    wait(browser, lambda b: attached(b) == [second["id"], first["id"]])
    assert elsewhere["id"] not in attached(browser)
    browser.save_screenshot(str(tmp_path / "attached.png"))
    browser.find_element(By.CSS_SELECTOR, f'#environment-sessions button[data-session-id="{first["id"]}"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "session").is_displayed() and b.find_element(By.ID, "session-title").text == first["id"])
    assert not browser.find_element(By.ID, "environment").is_displayed()
    assert browser.find_element(By.ID, "sessions-pane").is_displayed(), "back on the Sessions tab"
    info = browser.find_element(By.ID, "session-info")
    wait(browser, lambda b: f"environment {env['id']}" in info.text)
    assert "model gpt-test" in info.text
    browser.save_screenshot(str(tmp_path / "opened.png"))
    # And from the session back to its environment.
    info.find_element(By.CSS_SELECTOR, f'button[data-environment-id="{env["id"]}"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "environment").is_displayed() and b.find_element(By.ID, "environment-title").text == env["id"])
    assert not browser.find_element(By.ID, "session").is_displayed()
    wait(browser, lambda b: attached(b) == [second["id"], first["id"]])
    assert error_text(browser) == ""


def test_an_agent_shows_its_configuration_and_each_versions_sessions(browser, url: str, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    other = api.ok("POST", "/v1/agents", {"model": "gpt-test", "name": "other"})
    agent = api.ok("POST", "/v1/agents", {"model": "gpt-test", "name": "helper", "instructions": "Be brief. <b>v1</b>"})
    on_v1 = api.ok("POST", "/v1/agents/sessions", {"agent_id": agent["id"], "environment": {"type": "none"}})
    api.ok("POST", f"/v1/agents/{agent['id']}", {"instructions": "Be thorough. v2"})
    on_v2 = api.ok("POST", "/v1/agents/sessions", {"agent_id": agent["id"], "environment": {"type": "none"}})
    current = api.ok("POST", f"/v1/agents/{agent['id']}", {"instructions": "Be kind. v3"})
    assert current["version"] == 3
    sign_in(browser, url, api.key)
    browser.find_element(By.ID, "tab-agents").click()
    wait(browser, lambda b: rows(b, "agents", "data-agent-id") == [agent["id"], other["id"]])
    browser.find_element(By.CSS_SELECTOR, f'#agents button[data-agent-id="{agent["id"]}"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "agent-version").text == "version 3")
    assert browser.find_element(By.ID, "agent-title").text == f"helper ({agent['id']})"
    assert '"instructions": "Be kind. v3"' in browser.find_element(By.ID, "agent-config").text
    versions = browser.find_elements(By.CSS_SELECTOR, "#agent-versions details.version")
    summaries = [v.find_element(By.TAG_NAME, "summary").text for v in versions]
    assert summaries == ["version 3 (current) · 0 sessions", "version 2 · 1 session", "version 1 · 1 session"]
    # An older version's configuration comes from the session that pinned it, as text.
    versions[2].find_element(By.TAG_NAME, "summary").click()
    config = versions[2].find_element(By.CSS_SELECTOR, "pre.config").text
    assert '"instructions": "Be brief. <b>v1</b>"' in config
    assert browser.find_elements(By.CSS_SELECTOR, "#agent-versions b") == []
    versions[1].find_element(By.TAG_NAME, "summary").click()
    assert "Be thorough. v2" in versions[1].find_element(By.CSS_SELECTOR, "pre.config").text
    browser.save_screenshot(str(tmp_path / "versions.png"))
    versions[2].find_element(By.CSS_SELECTOR, f'button[data-session-id="{on_v1["id"]}"]').click()
    wait(browser, lambda b: b.find_element(By.ID, "session").is_displayed() and b.find_element(By.ID, "session-title").text == on_v1["id"])
    assert on_v2["id"] in rows(browser, "sessions", "data-session-id")
    assert error_text(browser) == ""


def metrics(url: str) -> dict[tuple[str, str], float]:
    """(name, label text) → value, from the server's /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            name, _, labels = series.partition("{")
            out[(name, labels.rstrip("}"))] = float(value)
    return out


def card(browser, metric: str) -> str:
    found = browser.find_elements(By.CSS_SELECTOR, f'#overview-cards .card[data-metric="{metric}"] .value')
    return found[0].text if found else ""


def test_the_overview_shows_turns_per_minute_failures_and_sandboxes(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    session = api.session({"type": "openai_hosted"})
    sign_in(browser, url, api.key)
    browser.find_element(By.ID, "tab-overview").click()
    wait(browser, lambda b: b.find_element(By.ID, "overview").is_displayed() and card(b, "turns") != "")
    assert card(browser, "turns_per_minute") == "measuring…"
    before = metrics(url)
    model.script(
        {"type": "reply", "text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
        {"type": "reply", "text": "done"},
        {"type": "error", "status": 400, "body": '{"error":{"message":"no"}}'},
    )
    ok = api.send(session["id"], "run true")
    wait(browser, lambda b: api.turn(session["id"], ok)["status"] == "completed", timeout=60)
    failed = api.send(session["id"], "fail")
    wait(browser, lambda b: api.turn(session["id"], failed)["status"] == "failed")
    failures = before.get(("rebyte_turns_total", 'status="failed"'), 0) + 1
    wait(browser, lambda b: int(card(b, "failed")) >= failures)
    wait(browser, lambda b: float(card(b, "turns_per_minute")) > 0)
    # The page shows what /metrics says (read again until both agree).
    now = lambda: metrics(url)  # noqa: E731
    wait(browser, lambda b: int(card(b, "turns")) == sum(v for (n, _), v in now().items() if n == "rebyte_turns_total"))
    wait(browser, lambda b: int(card(b, "sandboxes_running")) == now().get(("rebyte_sandboxes", 'state="running"'), 0))
    assert int(card(browser, "sandboxes_running")) >= 1, "the session's sandbox runs"
    statuses = {e.get_attribute("data-key") for e in browser.find_elements(By.CSS_SELECTOR, "#overview-turns tr")}
    assert {"completed", "failed"} <= statuses
    assert error_text(browser) == ""
    browser.save_screenshot(str(tmp_path / "overview.png"))


def test_a_session_created_elsewhere_appears_in_the_list(browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path):
    _, api = org
    first = api.session()
    sign_in(browser, url, api.key)
    assert rows(browser, "sessions", "data-session-id") == [first["id"]]
    second, third = api.session(), api.session()
    wait(browser, lambda b: rows(b, "sessions", "data-session-id") == [third["id"], second["id"], first["id"]], timeout=10)
    browser.save_screenshot(str(tmp_path / "appeared.png"))
    # Statuses follow too.
    model.script({"type": "reply", "text": "slow", "chunks": 4, "chunk_delay_ms": 1500})
    turn_id = api.send(second["id"], "hi")
    status = lambda b: b.find_element(By.CSS_SELECTOR, f'#sessions button[data-session-id="{second["id"]}"] .status').text  # noqa: E731
    wait(browser, lambda b: status(b) == "in_progress", timeout=10)
    open_session(browser, second["id"])
    wait(browser, lambda b: turn_status(b, turn_id) == "completed")
    assert rows(browser, "sessions", "data-session-id") == [third["id"], second["id"], first["id"]], "no row twice"


def test_a_session_named_in_the_url_opens_and_another_organizations_is_not_found(
    browser, url: str, admin: Api, org: tuple[str, Api], tmp_path: Path
):
    _, api = org
    mine = api.session()
    _, stranger = admin.org_key(["tasks:read", "tasks:write"])
    theirs = stranger.session()
    sign_in(browser, url, api.key)
    browser.get(f"{url}/console/#/sessions/{mine['id']}")
    wait(browser, lambda b: b.find_element(By.ID, "session").is_displayed() and b.find_element(By.ID, "session-title").text == mine["id"])
    wait(browser, lambda b: b.find_element(By.ID, "stream-status").text == "live")
    assert api.key not in browser.current_url
    browser.get(f"{url}/console/#/sessions/{theirs['id']}")
    wait(browser, lambda b: error_text(b).startswith("404 not_found_error: "))
    assert theirs["id"] in error_text(browser)
    assert not browser.find_element(By.ID, "session").is_displayed()
    browser.save_screenshot(str(tmp_path / "not-found.png"))
    # Opening a session from the list names it in the URL.
    wait(browser, lambda b: rows(b, "sessions", "data-session-id") == [mine["id"]])
    open_session(browser, mine["id"])
    assert browser.current_url == f"{url}/console/#/sessions/{mine['id']}"


def test_the_sessions_list_filters_by_agent_and_status(
    browser, url: str, model: Model, org: tuple[str, Api], tmp_path: Path
):
    from selenium.webdriver.support.ui import Select

    _, api = org
    tool = {"type": "function", "name": "now", "description": "The time", "parameters": {"type": "object", "properties": {}}}
    agent = api.ok("POST", "/v1/agents", {"model": "gpt-test", "name": "filtered", "tools": [tool]})
    on_agent = [api.ok("POST", "/v1/agents/sessions", {"agent_id": agent["id"], "environment": {"type": "none"}}) for _ in range(2)]
    inline = api.session()
    model.script({"type": "reply", "text": "", "tool_calls": [{"id": "call_f", "name": "now", "arguments": {}}]})
    api.send(on_agent[0]["id"], "What time is it?")
    wait(browser, lambda b: api.ok("GET", f"/v1/agents/sessions/{on_agent[0]['id']}")["status"] == "requires_action")
    sign_in(browser, url, api.key)
    listed = lambda b: rows(b, "sessions", "data-session-id")  # noqa: E731
    assert listed(browser) == [inline["id"], on_agent[1]["id"], on_agent[0]["id"]]
    wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#filter-agent option")) == 2)
    Select(browser.find_element(By.ID, "filter-agent")).select_by_value(agent["id"])
    wait(browser, lambda b: listed(b) == [on_agent[1]["id"], on_agent[0]["id"]])
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("requires_action")
    wait(browser, lambda b: listed(b) == [on_agent[0]["id"]])
    browser.save_screenshot(str(tmp_path / "filtered.png"))
    Select(browser.find_element(By.ID, "filter-agent")).select_by_value("")
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("idle")
    wait(browser, lambda b: listed(b) == [inline["id"], on_agent[1]["id"]])
    # A new session that does not match stays out of the live list.
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("requires_action")
    wait(browser, lambda b: listed(b) == [on_agent[0]["id"]])
    api.session()
    time.sleep(3)  # past a poll of the list
    assert listed(browser) == [on_agent[0]["id"]]
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("")
    wait(browser, lambda b: len(listed(b)) == 4)
    assert error_text(browser) == ""
