"""Screenshots of the report's first screen for a FAIL and a PASS release (docs/screenshots).

Runs the bundled job twice with the board's targets written in (grid sampler), once with a
target the release misses and once with targets it meets, renders each report in headless
Chromium (Selenium + chromedriver, as tests/test_report_browser.py) and saves the first screen:

- ``docs/screenshots/report_top_FAIL.png``: the bundled spec as shipped (exact locations: the
  location verdict FAIL) with the target ``max_attributable_record = 0.02`` on rel:0.1 (risk
  FAIL), released under ``on_*_failure = "warn"``;
- ``docs/screenshots/report_top_PASS.png``: README's tour — the bundled spec with its commented
  ``protect = "targets"`` and targets uncommented (risk PASS after the rounds) — with the outlier
  policy applied at k = 3 and ``r_max_m = 20000`` (location PASS);
- ``docs/screenshots/report_top_default.png``: the bundled spec exactly as shipped (README's
  tour: location FAIL under "warn", no targets so risk NOT ASSESSED).

Before saving, it checks in the browser that every key-figure value drawn green says PASS and
every red one FAIL (the words and the colours agree), and prints the verdicts.

Usage: ``python benchmarks/make_report_screenshots.py [--out docs/screenshots]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import warnings
from pathlib import Path

import synthgeo as sg
from synthgeo.config import bundled_spec_path
from synthgeo.config.risk import RiskTarget

ROOT = Path(__file__).resolve().parents[1]


def _tour_spec(folder: Path):
    """Return the bundled spec with its commented protect line and targets uncommented."""
    from synthgeo.config.spec import bundled_tour_spec_text

    path = folder / "tour.toml"
    path.write_text(bundled_tour_spec_text(), encoding="utf-8")
    return sg.load_spec(path)


def _specs(folder: Path):
    spec = sg.load_spec(bundled_spec_path()).replace("sampling", sampler="grid")
    fail = spec.replace("risk", on_risk_failure="warn", targets=[
        RiskTarget(measure="rel:0.1", max_attributable_record=0.02)])
    ok = _tour_spec(folder).replace("anonymity", k=3, r_max_m=20000.0, treatment="apply")
    return {"FAIL": fail, "PASS": ok, "default": sg.load_spec(bundled_spec_path())}


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def colours_and_words(browser) -> list[tuple[str, str]]:
    """(computed colour, text) of every coloured key-figure value on the page."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#table-key-figures span'))"
        ".map(s => [getComputedStyle(s).color, s.className, s.textContent]);")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    browser = _browser()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for tag, spec in _specs(Path(tmp)).items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rel = sg.run(spec)
                    out = rel.write(Path(tmp) / tag)
                print(f"{tag}: verdicts {rel.verdicts}")
                browser.get((out / "report.html").resolve().as_uri())
                spans = colours_and_words(browser)
                colours = {cls: {c for c, k, _ in spans if k == cls} for cls in ("ok", "warn")}
                for colour, cls, text in spans:
                    word = "PASS" if cls == "ok" else "FAIL"
                    assert word in text or text.startswith(("passed", "FAILED")), (cls, text[:80])
                assert not (colours["ok"] & colours["warn"]), colours
                browser.execute_script("window.scrollTo(0, 0);")
                path = args.out / f"report_top_{tag}.png"
                assert browser.save_screenshot(str(path))
                print(f"  {len(spans)} coloured values, words agree; wrote "
                      f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    finally:
        browser.quit()


if __name__ == "__main__":
    main()
