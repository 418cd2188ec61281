"""The status page in a real browser (Debian's chromium, headless, through chromedriver).

Skipped where chromium, chromedriver or selenium is missing (``.ci/run`` installs them);
nothing here downloads a browser: both paths are given to selenium.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("selenium")

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.cli.helpers import Service, write_jobfile

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
    ),
]

JOBS = """
[jobs.tick]
fn = "tasks:tick"
every = "100ms"
"""

WAIT = 20.0


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not look for a driver online
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,700"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=DriverService(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    """A wait that looks again when a refresh replaced the row it read (the page rebuilds its rows)."""
    return WebDriverWait(
        driver, WAIT, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    )


def click(driver: WebDriver, selector: str) -> None:
    """Click the button ``selector`` finds, again if a refresh replaced it first."""

    def clicked(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, selector).click()
        return True

    wait(driver).until(clicked)


def runs_shown(driver: WebDriver) -> int:
    text = driver.find_element(By.CSS_SELECTOR, 'tr[data-task-id="tick"] td.runs').text
    return int(text) if text.isdigit() else -1


def status_shown(driver: WebDriver) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, 'tr[data-task-id="tick"] td.status').text)


def refreshes(driver: WebDriver, count: int) -> None:
    """Wait until the page has refreshed itself ``count`` more times."""
    for _ in range(count):
        before = driver.find_element(By.ID, "updated").text
        wait(driver).until(lambda d, b=before: d.find_element(By.ID, "updated").text != b)


def api_runs(base: str) -> int:
    with urllib.request.urlopen(f"{base}/api/tasks/tick", timeout=10) as reply:
        return int(json.loads(reply.read())["runs"])


def test_pause_and_resume_from_the_page(tmp_path: Path, browser: WebDriver) -> None:
    write_jobfile(tmp_path, JOBS)
    args = ("jobs.toml", "--no-status", "--store", ":memory:", "--http", "127.0.0.1:0", "--http-token", "T")
    with Service(*args, cwd=tmp_path) as service:
        base = service.expect(r"status page on (http://127\.0\.0\.1:\d+)").group(1)
        browser.get(base + "/")
        wait(browser).until(lambda d: runs_shown(d) > 0)
        assert browser.find_element(By.ID, "token-form").is_displayed()  # asked once, up front
        browser.find_element(By.ID, "token").send_keys("T")
        browser.find_element(By.ID, "token-use").click()
        assert not browser.find_element(By.ID, "token-form").is_displayed()

        click(browser, 'tr[data-task-id="tick"] button.pause')
        wait(browser).until(lambda d: status_shown(d) == "paused")
        paused_at = api_runs(base)
        refreshes(browser, 2)  # every refresh shows the same count: the runs stopped
        [shown] = wait(browser).until(lambda d: (runs_shown(d),))  # (a tuple: 0 runs is an answer)
        assert shown == paused_at == api_runs(base)

        click(browser, 'tr[data-task-id="tick"] button.resume')
        wait(browser).until(lambda d: status_shown(d) in ("scheduled", "running"))
        wait(browser).until(lambda d: runs_shown(d) > paused_at)  # and they go on

        browser.get(base + "/tasks/tick")  # the task's page: its history
        wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#history tbody tr"))
        assert "completed" in browser.find_element(By.ID, "history").text
        service.send(signal.SIGTERM)
        assert service.wait() == 0


def test_a_page_without_a_token_has_no_buttons_and_the_api_refuses(
    tmp_path: Path, browser: WebDriver
) -> None:
    write_jobfile(tmp_path, JOBS)
    with Service("jobs.toml", "--no-status", "--store", ":memory:", "--http", "0", cwd=tmp_path) as service:
        base = service.expect(r"status page on (http://127\.0\.0\.1:\d+) \(control off").group(1)
        browser.get(base + "/")
        wait(browser).until(lambda d: runs_shown(d) > 0)
        assert browser.find_elements(By.CSS_SELECTOR, "button.control") == []
        assert not browser.find_element(By.ID, "token-form").is_displayed()
        request = urllib.request.Request(f"{base}/api/tasks/tick/pause", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
        refused.value.close()
        service.send(signal.SIGTERM)
        assert service.wait() == 0


def test_a_task_named_like_markup_shows_as_text(browser: WebDriver) -> None:
    from actors import Scheduler
    from actors.web import app
    from actors.web.server import WebServer

    name = '<img src=x onerror="document.title=1"><script>document.title=2</script>'
    scheduler = Scheduler(1)
    server = WebServer(app(scheduler))
    try:
        scheduler.schedule_at_fixed_rate(lambda: None, 3600, task_id="evil", name=name)
        server.start()
        browser.get(server.url + "/")
        row = 'tr[data-task-id="evil"]'
        wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, row))
        shown = browser.find_element(By.CSS_SELECTOR, f"{row} td a").text
        assert name in shown
        assert browser.title == "Task scheduler"  # neither the img nor the script ran
        assert browser.find_elements(By.CSS_SELECTOR, "#tasks img") == []
    finally:
        server.stop()
        scheduler.shutdown()


def test_a_long_list_is_shown_a_page_at_a_time(browser: WebDriver) -> None:
    from actors import Scheduler
    from actors.web import app
    from actors.web.page import PAGE_ROWS
    from actors.web.server import WebServer

    scheduler = Scheduler(1)
    server = WebServer(app(scheduler))
    try:
        for n in range(PAGE_ROWS + 5):
            scheduler.schedule_at_fixed_rate(lambda: None, 3600, 3600, task_id=f"t{n:03}")
        server.start()
        browser.get(server.url + "/")

        def rows(driver: WebDriver) -> list[str]:  # in one script: a refresh replaces the rows
            script = (
                "return [...document.querySelectorAll('#tasks tbody tr')].map((row) => row.dataset.taskId);"
            )
            shown: list[str] = driver.execute_script(script)
            return shown

        wait(browser).until(lambda d: len(rows(d)) == PAGE_ROWS)
        assert rows(browser) == [f"t{n:03}" for n in range(PAGE_ROWS)]
        assert browser.find_element(By.ID, "shown").text == f"tasks 1\u2013{PAGE_ROWS} of {PAGE_ROWS + 5}"
        assert not browser.find_element(By.ID, "previous").is_enabled()
        browser.find_element(By.ID, "next").click()
        wait(browser).until(lambda d: len(rows(d)) == 5)
        assert rows(browser) == [f"t{n:03}" for n in range(PAGE_ROWS, PAGE_ROWS + 5)]
        assert not browser.find_element(By.ID, "next").is_enabled()
        browser.find_element(By.ID, "previous").click()
        wait(browser).until(lambda d: len(rows(d)) == PAGE_ROWS)
    finally:
        server.stop()
        scheduler.shutdown()
