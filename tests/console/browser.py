"""What the console's browser tests do on the page: sign in, wait, open a
session, read a turn's status and text, read the error line."""

from __future__ import annotations

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20


def sign_in(browser, url: str, key: str) -> None:
    browser.get(f"{url}/")  # redirects to /console/
    wait(browser, lambda b: b.current_url == f"{url}/console/" and b.find_element(By.ID, "key").is_displayed())
    browser.find_element(By.ID, "key").send_keys(key)
    browser.find_element(By.ID, "signin-button").click()
    wait(browser, lambda b: b.find_element(By.ID, "console").is_displayed())


# A view that refreshes replaces its elements: one found just before a
# refresh is stale when read, and the condition is simply tried again.
RETRY_ON = (NoSuchElementException, StaleElementReferenceException)


def wait(browser, condition, timeout: float = WAIT):
    return WebDriverWait(browser, timeout, poll_frequency=0.1, ignored_exceptions=RETRY_ON).until(condition)


def open_session(browser, session_id: str) -> None:
    button = f'#sessions button[data-session-id="{session_id}"]'
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, button))
    browser.find_element(By.CSS_SELECTOR, button).click()
    wait(browser, lambda b: b.find_element(By.ID, "session-title").text == session_id)
    wait(browser, lambda b: b.find_element(By.ID, "stream-status").text == "live")


def turn_status(browser, turn_id: str) -> str:
    found = browser.find_elements(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] .turn-status')
    return found[0].text if found else ""


def assistant_text(browser, turn_id: str) -> str:
    found = browser.find_elements(By.CSS_SELECTOR, f'.turn[data-turn-id="{turn_id}"] .item[data-type="message"][data-role="assistant"] pre.text')
    return "".join(f.text for f in found)


def error_text(browser) -> str:
    area = browser.find_element(By.ID, "error")
    return area.text if area.is_displayed() else ""


def rows(browser, list_id: str, attribute: str) -> list[str]:
    """The ids a list of the console shows, top to bottom."""
    return [e.get_attribute(attribute) for e in browser.find_elements(By.CSS_SELECTOR, f"#{list_id} button[{attribute}]")]
