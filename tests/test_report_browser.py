"""report.html in a real browser: headless Debian Chromium through Selenium and chromedriver.

Skipped, with the reason, when Chromium, chromedriver or Selenium is missing (``.ci/run``
installs Debian's ``chromium`` and ``chromium-driver``, so CI runs it). Screenshots go under
pytest's tmp_path (the test prints the paths); set ``SYNTHGEO_SCREENSHOT_DIR`` to also copy
them there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from synthgeo.release.report._html import CONFIDENTIAL_LINE

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             "/usr/bin/chromium") if p and Path(p).exists()), None)
DRIVER = next((p for p in (shutil.which("chromedriver"), "/usr/bin/chromedriver",
                           "/usr/lib/chromium/chromedriver") if p and Path(p).exists()), None)
try:
    import selenium  # noqa: F401

    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

MISSING = CHROMIUM is None or DRIVER is None or not HAVE_SELENIUM
#: .ci/run sets this: in CI a missing browser is a failure, not a skip.
REQUIRED = os.environ.get("SYNTHGEO_REQUIRE_BROWSER") == "1"


def test_browser_present_when_required():
    if REQUIRED:
        assert not MISSING, (f"SYNTHGEO_REQUIRE_BROWSER=1 but chromium={CHROMIUM!r}, "
                             f"chromedriver={DRIVER!r}, selenium={HAVE_SELENIUM}")


needs_browser = pytest.mark.skipif(
    MISSING,
    reason="no headless browser: needs Chromium and chromedriver (Debian: apt-get install "
           "chromium chromium-driver) and the selenium package (pip install -e '.[test]')",
)

KEY_TABLES = ("table-key-figures", "table-overview", "table-at-risk-sensitivity",
              "table-at-risk-effects", "table-risk", "table-utility", "table-convergence")
FIGURES = ("fig-at-risk-map", "fig-surfaces", "fig-histograms", "fig-risk-groups",
           "fig-risk-records", "fig-utility", "fig-rank", "fig-spatial-k", "fig-pmse-regions")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _check_page(browser, report: Path, shots: Path, tag: str, *, grid: bool = False
                ) -> list[Path]:
    """grid: the fits are grid quadrature (issue 13): grid diagnostics, no rank plots."""
    from selenium.webdriver.common.by import By

    figures = tuple(f for f in FIGURES if not (grid and f == "fig-rank"))
    tables = tuple("table-grid-diagnostics" if grid and t == "table-convergence" else t
                   for t in KEY_TABLES)

    assert report.read_text(encoding="utf-8").splitlines()[0] == CONFIDENTIAL_LINE
    browser.get(report.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    banner = browser.find_element(By.ID, "confidential-banner")
    assert banner.is_displayed() and banner.text.startswith("CONFIDENTIAL")
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.id, i.complete, i.naturalWidth, "
        "i.naturalHeight]);")
    assert sorted(i[0] for i in images) == sorted(figures)
    for img_id, complete, width, height in images:
        assert complete and width > 100 and height > 100, (img_id, complete, width, height)
    for table_id in tables:
        rows = browser.find_elements(By.CSS_SELECTOR, f"#{table_id} tr")
        assert len(rows) >= 2, table_id
    # the Reiter table holds the three fits, the risk table the three groups
    utility = browser.find_element(By.ID, "table-utility").text
    assert all(m in utility for m in ("confidential", "unrestricted", "restricted"))
    risk = browser.find_element(By.ID, "table-risk").text
    assert all(g in risk for g in ("at_risk", "other", "all"))
    shots.mkdir(parents=True, exist_ok=True)
    top = shots / f"report_top_{tag}.png"
    browser.execute_script("window.scrollTo(0, 0);")
    assert browser.save_screenshot(str(top))
    surfaces = shots / f"report_surfaces_{tag}.png"
    section = browser.find_element(By.ID, "surfaces")
    browser.execute_script("arguments[0].scrollIntoView();", section)
    assert section.screenshot(str(surfaces))
    out = [top, surfaces]
    extra = os.environ.get("SYNTHGEO_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        out += [Path(shutil.copy(p, Path(extra) / p.name)) for p in (top, surfaces)]
    for p in out:
        assert p.stat().st_size > 10_000
        print(f"screenshot: {p}")
    return out


@needs_browser
def test_fake_release_report_in_chromium(browser, tmp_path):
    from synthgeo.release.report import render_report
    from synthgeo.testing import fake_release_result

    report = tmp_path / "report.html"
    report.write_text(render_report(fake_release_result(n_implicates=12)), encoding="utf-8")
    _check_page(browser, report, tmp_path / "screenshots", "fake")


@needs_browser
@pytest.mark.slow
def test_bundled_run_report_in_chromium(browser, bundled_release, tmp_path):
    out = Path(bundled_release)
    report = out / "report.html"
    assert report.is_file()
    # confidential: beside release/, never inside it
    assert not any(p.suffix == ".html" for p in (out / "release").rglob("*"))
    _check_page(browser, report, tmp_path / "screenshots", "bundled", grid=True)


@needs_browser
def test_key_figure_colours_and_words_agree_for_fail_and_pass(browser, tmp_path):
    """Green values say PASS (or passed), red ones FAIL, whatever the verdicts (issue 26)."""
    import dataclasses

    from synthgeo.config.risk import RiskTarget
    from synthgeo.release.report import render_report
    from synthgeo.risk.verdict import assess_risk
    from synthgeo.testing import fake_release_result

    result = fake_release_result(n_implicates=12)
    scores = result.risk_scores
    key = scores.measures[0].key
    seen = {}
    for tag, limit in (("FAIL", 0.0), ("PASS", 1.0)):
        verdict = assess_risk(scores.summary, [RiskTarget(measure=key,
                                                          max_attributable_record=limit)])
        assert verdict.status == tag

        class WithTarget:
            risk_scores = dataclasses.replace(scores, verdict=verdict)

            def __getattr__(self, name):
                return getattr(result, name)

        report = tmp_path / f"{tag}.html"
        report.write_text(render_report(WithTarget()), encoding="utf-8")
        browser.get(report.resolve().as_uri())
        spans = browser.execute_script(
            "return Array.from(document.querySelectorAll('#table-key-figures span'))"
            ".map(s => [getComputedStyle(s).color, s.className, s.textContent]);")
        for colour, cls, text in spans:
            assert cls in ("ok", "warn"), cls
            assert (("PASS" in text or text == "passed") if cls == "ok"
                    else ("FAIL" in text)), (cls, text[:60])
            seen.setdefault(cls, set()).add(colour)
        verdict_row = browser.find_element("css selector", "#table-key-figures tr").text
        assert f"risk verdict (released model) {tag}" in verdict_row
    assert seen["ok"] and seen["warn"] and not (seen["ok"] & seen["warn"])
