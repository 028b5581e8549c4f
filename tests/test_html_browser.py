"""The HTML report in a real browser: headless Chromium driven through the system chromedriver.

Every fixture's report is loaded with the network blocked and must draw its charts without a
console error or warning, show every finding code, and draw one timeline bar per GPU call
(counted in the SVG). The seed incident's report is saved as a screenshot and a PDF under
``build/test-artifacts/`` for people to look at.

Chromium and chromedriver come from the system packages (``sh tools/install-test-browser.sh``,
part of the README's test command). Without them these tests skip with that reason, except
under CI=true, where they fail.
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuzk_diag.analysis import Analysis, analyze
from cuzk_diag.compare import compare_metrics
from cuzk_diag.gate import metrics_from_analysis
from cuzk_diag.report import html as html_report
from cuzk_diag.report import html_charts

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
ARTIFACTS = ROOT / "build" / "test-artifacts"
LOGS = sorted((FIXTURES / "sim").glob("*.log")) + [FIXTURES / "example.log"]
INCIDENT = FIXTURES / "sim" / "incident.log"
INCIDENT_JOB = "18072e8c-35bf-492d-89e9-c616612e7696"
HOSTILE_JOB = "<img src=x onerror=window.__pwned=1></script><script>window.__pwned=2</script>"
LOAD_TIMEOUT_S = 120
WIDTH, HEIGHT = 1280, 900


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests must run in CI: {reason}")
    pytest.skip(reason)


def _find(env: str, *names: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env]
    return next((p for p in map(shutil.which, names) if p), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium that can load nothing from the network."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (python3 -m pip install -e '.[test]')")
    chrome = _find("CUZK_DIAG_CHROMIUM", "chromium", "chromium-browser", "google-chrome")
    driver_path = _find("CUZK_DIAG_CHROMEDRIVER", "chromedriver")
    if not chrome or not driver_path:
        _unavailable("Chromium or chromedriver is missing (sh tools/install-test-browser.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WIDTH},{HEIGHT}",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    driver.set_page_load_timeout(LOAD_TIMEOUT_S)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws://*", "wss://*"]}
        )
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        yield driver
    finally:
        driver.quit()


def load(driver: Any, page: Path) -> list[dict[str, Any]]:
    """Open the page, wait until every chart is drawn (or failed); the console's messages."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")  # drop what an earlier page left
    driver.get(page.as_uri())
    WebDriverWait(driver, LOAD_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.body.dataset.charts") != "pending"
    )
    messages: list[dict[str, Any]] = driver.get_log("browser")
    return messages


def marks(driver: Any, name: str) -> int:
    """Drawn items of the Vega mark ``name`` (its SVG group has class ``<name>_marks``); a name
    ending in ``*`` counts every mark whose name starts with the rest."""
    count: int = driver.execute_script(
        "const [name, prefix] = arguments;"
        "return Array.from(document.querySelectorAll('svg g.role-mark'))"
        ".filter(g => Array.from(g.classList).some(c => c.endsWith('_marks') && "
        "(prefix ? c.startsWith(name) : c === name + '_marks')))"
        ".reduce((n, g) => n + g.children.length, 0)",
        name.rstrip("*"),
        name.endswith("*"),
    )
    return count


def assert_clean(driver: Any, messages: list[dict[str, Any]]) -> None:
    """Charts drawn, nothing on the console, nothing fetched from outside the file."""
    assert driver.execute_script("return document.body.dataset.charts") == "drawn"
    assert [m["message"] for m in messages if m["level"] in ("SEVERE", "WARNING")] == []
    fetched = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert [u for u in fetched if not u.startswith(("data:", "blob:"))] == []


def write_page(analysis: Analysis, path: Path) -> Path:
    path.write_text(html_report.analysis_page(analysis), encoding="utf-8")
    return path


def calls_with_clock(a: Analysis) -> int:
    df = a.partitions
    start, end = df["start_ms"], df["end_ms"]
    return int((start.notna() & end.notna() & (end >= start)).sum())


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_fixture_report(browser: Any, log: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    a = analyze([str(log)])
    messages = load(browser, write_page(a, tmp_path / "report.html"))
    assert_clean(browser, messages)
    for f in a.findings:
        card = browser.find_element(By.CSS_SELECTOR, f'article.finding[data-code="{f.code}"]')
        assert card.is_displayed()
        assert f.code in card.text and f.message[:40] in card.text
    expected = calls_with_clock(a)
    if expected:
        assert marks(browser, "timeline_calls") == expected
        kernels = int((a.partitions["gpu_total_ms"].fillna(0) > 0).sum())
        assert marks(browser, "timeline_kernels") == min(kernels, expected)
    else:
        assert not browser.find_elements(By.ID, "chart-timeline")
        assert (
            "no timeline"
            in browser.find_element(By.ID, "timeline")
            .find_element(By.XPATH, "following-sibling::p[contains(@class, 'note')][1]")
            .text
        )
    assert marks(browser, "waterfall_phases") == len(a.facts.waterfall.segments)
    spec, _ = html_charts.stage_distributions(a)
    panels = spec["vconcat"]
    boxes = [r for p in panels for r in p["data"]["values"] if r["kind"] == "box"]
    assert len(panels) == len(a.stages)
    assert marks(browser, "distribution_boxes_*") == len(boxes)


def test_incident_report_screenshot_and_print(browser: Any, tmp_path: Path) -> None:
    """The seed incident as a person sees it (screenshot) and prints it (PDF)."""
    from selenium.webdriver.common.by import By

    a = analyze([str(INCIDENT)])
    assert [f.code for f in a.findings] == ["CZ101", "CZ201", "CZ202", "CZ501"]
    assert_clean(browser, load(browser, write_page(a, tmp_path / "incident.html")))
    assert marks(browser, "timeline_calls") == 10
    assert marks(browser, "timeline_wait") == 9  # the first call did not wait for the lock
    # a finding's documentation link opens its collapsed section
    doc = browser.find_element(By.ID, "rule-CZ101")
    assert doc.get_attribute("open") is None
    browser.find_element(By.CSS_SELECTOR, 'a[href="#rule-CZ101"]').click()
    assert doc.get_attribute("open") is not None
    assert "What it flags" in doc.text

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
        },
    )
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    (ARTIFACTS / "incident-report.png").write_bytes(png)

    pdf = base64.b64decode(
        browser.execute_cdp_cmd("Page.printToPDF", {"printBackground": True})["data"]
    )
    assert pdf.startswith(b"%PDF")
    (ARTIFACTS / "incident-report.pdf").write_bytes(pdf)
    # printing opened every rule's documentation and closed it again afterwards
    assert browser.execute_script("return document.querySelectorAll('details[open]').length") == 1


def test_log_text_stays_text(browser: Any, tmp_path: Path) -> None:
    """Markup in the log (a job id) is shown as text in the page and in the chart tooltips."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    log = tmp_path / "run<b>1.log"
    log.write_text(INCIDENT.read_text(encoding="utf-8").replace(INCIDENT_JOB, HOSTILE_JOB))
    a = analyze([str(log)])
    assert_clean(browser, load(browser, write_page(a, tmp_path / "hostile.html")))
    assert browser.title == f"cuzk-diag: {log}"
    bar = browser.find_element(By.CSS_SELECTOR, "svg g.timeline_calls_marks > path")
    ActionChains(browser).move_to_element(bar).perform()
    tooltip = WebDriverWait(browser, 20).until(
        lambda d: next(
            (e for e in d.find_elements(By.ID, "vg-tooltip-element") if e.is_displayed()), None
        )
    )
    assert HOSTILE_JOB in tooltip.text
    assert browser.find_elements(By.CSS_SELECTOR, "#vg-tooltip-element img") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main img, body > img") == []
    assert browser.execute_script("return window.__pwned === undefined")


def test_long_run_draws_time_bins(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above MAX_CALL_BARS calls each worker lane shows its phases' share of time bins."""
    from selenium.webdriver.common.by import By

    a = analyze([str(FIXTURES / "example.log")])
    monkeypatch.setattr(html_charts, "MAX_CALL_BARS", 40)
    spec, _ = html_charts.timeline(a, html_charts.prepare(a))
    assert_clean(browser, load(browser, write_page(a, tmp_path / "long.html")))
    assert marks(browser, "timeline_calls") == 0
    assert marks(browser, "timeline_shares") == len(spec["vconcat"][-1]["data"]["values"]) > 60
    section = browser.find_element(By.ID, "timeline").find_element(By.XPATH, "..")
    assert "Aggregated: 60 calls are too many to draw one by one." in section.text


def test_compare_report(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    runs = [
        analyze([str(FIXTURES / "rules" / f"unpinned-host-memory.{kind}.log")])
        for kind in ("clean", "trigger")
    ]
    base = metrics_from_analysis(runs[0], "base")
    cand = metrics_from_analysis(runs[1], "cand")
    cmp = compare_metrics(base, cand)
    page = tmp_path / "compare.html"
    page.write_text(html_report.compare_page(cmp, base, cand), encoding="utf-8")
    assert_clean(browser, load(browser, page))
    # baseline and candidate, every stage
    assert marks(browser, "distribution_boxes_*") == 2 * len(cmp.stages)
    new = browser.find_element(By.CSS_SELECTOR, 'article[data-status="new"]')
    assert new.is_displayed() and "CZ102" in new.text
    (message,) = [f.message for f in cand.findings if f.code == "CZ102"]
    assert message in new.text
    rows = browser.find_elements(By.CSS_SELECTOR, "#stages ~ table tbody tr")
    assert len(rows) >= len(cmp.stages)


# -- the install step of the test command -----------------------------------------------------

SCRIPT = ROOT / "tools" / "install-test-browser.sh"


def run_install_script(tmp_path: Path, tools: dict[str, str], ci: bool) -> tuple[int, str, str]:
    """The script with only ``tools`` (name -> shell body) on PATH; apt-get calls are logged."""
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    env = {"PATH": str(bin_dir), "LOG": str(tmp_path / "calls.log")}
    if ci:
        env["CI"] = "true"
    sh = shutil.which("sh") or "/bin/sh"
    proc = subprocess.run([sh, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    calls = tmp_path / "calls.log"
    return proc.returncode, proc.stderr, calls.read_text() if calls.exists() else ""


def test_install_script_installs_chromium_when_missing(tmp_path: Path) -> None:
    code, err, calls = run_install_script(
        tmp_path, {"id": "echo 0", "apt-get": 'echo "apt-get $*" >> "$LOG"'}, ci=True
    )
    assert code == 0, err
    assert calls.splitlines() == [
        "apt-get update -qq",
        "apt-get install -y -qq chromium chromium-driver",
    ]


def test_install_script_does_nothing_when_chromium_is_there(tmp_path: Path) -> None:
    tools = {"chromium": "true", "chromedriver": "true", "apt-get": 'echo "$*" >> "$LOG"'}
    assert run_install_script(tmp_path, tools, ci=True) == (0, "", "")


@pytest.mark.parametrize("ci", [True, False], ids=["ci", "local"])
def test_install_script_without_a_package_manager(tmp_path: Path, ci: bool) -> None:
    code, err, _ = run_install_script(tmp_path, {"id": "echo 1000"}, ci=ci)
    assert "cannot install Chromium for the browser tests: no apt-get" in err
    assert code == (1 if ci else 0)  # CI must not go on to skip the browser tests
