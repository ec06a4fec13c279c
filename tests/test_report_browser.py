"""The report as a person sees it (issue 13, item 7): the page of a small real sweep rendered by
headless Chromium at 1280 px, driven through Selenium (Debian's ``chromium`` and ``chromium-driver``,
installed by ``.ci/run``; in CI a missing browser fails the test, it never skips).

Checks: no horizontal overflow (the document is no wider than the window and no element outside
the charts is wider than the viewport); the verdict is the first section and names a variant of the
sweep; no table header is a raw metric key of the catalogue; no cell shows an unrounded float,
``None``, ``nan`` or scientific notation; no resource outside the page is loaded. A full-page
screenshot is saved under ``$CI_ARTIFACTS`` (default ``.ci/artifacts/``, git-ignored) and its path
printed.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path

import pytest

from ci_policy import skip_or_fail
from twinsweep.core.metrics import metric_names
from twinsweep.sweep.api import run_sweep

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 1280

SPEC = """
[study]
name = "browser-check"
output = "{out}"
seeds = 2

[perturbation]
runtime_sigma = 0.2
submit_jitter = "1m"

[[datasets]]
name = "kth-sp2"
trace = "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"
windows = [{{ name = "day144", start = "144d", duration = "12h" }}]

[grid]
policy = ["fcfs", "sjf"]
backfill = ["none", "easy"]
sample_period = ["1m"]
cooling = [true]

[rank]
wait_censored_mean_s = "min"
facility_j_per_node_h = "min"

[backend]
name = "local"
workers = 1

[report]
bootstrap = 200
"""

#: What the page measures in the browser: document and viewport widths, the elements (outside SVG
#: charts, whose drawing is clipped to them) that reach past the viewport, the section ids in page
#: order, the verdict's text, every table header and cell text, and resources loaded from outside.
PROBE = """
const W = document.documentElement.clientWidth;
const wide = [];
for (const e of document.body.querySelectorAll('*')) {
  if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;
  const r = e.getBoundingClientRect();
  if (r.right > W + 0.5 || r.width > W + 0.5)
    wide.push(e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(r.width) + 'px: ' +
              (e.textContent || '').slice(0, 60));
}
const v = document.getElementById('verdict');
let verdict = '';
for (let n = v; n && !(n !== v && n.tagName === 'H2'); n = n.nextElementSibling) verdict += ' ' + n.innerText;
return {scrollWidth: document.documentElement.scrollWidth, clientWidth: W, wide: wide.slice(0, 20),
        sections: [...document.querySelectorAll('h2[id]')].map(h => h.id), verdict: verdict,
        headers: [...document.querySelectorAll('th')].map(t => t.innerText.trim()),
        cells: [...document.querySelectorAll('td')].map(t => t.innerText.trim()),
        external: performance.getEntriesByType('resource').map(r => r.name).filter(n => !n.startsWith('data:')),
        height: document.documentElement.scrollHeight};
"""


def _browser():
    """A headless Chromium (Selenium WebDriver through Debian's chromedriver) at 1280 px."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip_or_fail("selenium is not installed (pip install -e '.[test]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        skip_or_fail("headless Chromium is missing: apt-get install chromium chromium-driver (.ci/run does)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={WIDTH},900", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    return webdriver.Chrome(options=opts, service=Service(driver))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    spec = d / "spec.toml"
    spec.write_text(SPEC.format(out=d / "out"))
    res = run_sweep(spec, backend="local")
    assert not res.failed and res.report is not None
    drv = _browser()
    try:
        drv.get(res.report.as_uri())
        info = drv.execute_script(PROBE)
        shot = drv.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": WIDTH, "height": info["height"], "scale": 1}})
    finally:
        drv.quit()
    art = Path(os.environ.get("CI_ARTIFACTS") or ROOT / ".ci" / "artifacts")
    art.mkdir(parents=True, exist_ok=True)
    path = art / "report_1280.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"\nreport screenshot (1280 px, full page): {path}")
    variants = {f"{p}+{b}" for p in ("fcfs", "sjf") for b in ("none", "easy")}
    return info, variants, path


def test_page_fits_1280_px(page):
    info, _, _ = page
    assert info["clientWidth"] == WIDTH
    assert info["scrollWidth"] <= info["clientWidth"], info["wide"]
    assert not info["wide"], info["wide"]


def test_verdict_first_and_names_a_variant(page):
    info, variants, _ = page
    assert info["sections"][0] == "verdict"
    assert any(re.search(rf"(?<![\w+]){re.escape(v)}(?![\w+])", info["verdict"]) for v in variants), info["verdict"]


def test_headers_are_labels_not_metric_keys(page):
    info, _, _ = page
    keys = set(metric_names())
    bad = [h for h in info["headers"] if any(re.search(rf"(?<!\w){re.escape(k)}(?!\w)", h) for k in keys)]
    assert not bad, bad


#: A cell's number is unrounded with more than 6 significant digits after the point
#: (e.g. 769.9275362318841); scientific notation is a mantissa with e±exponent.
_UNROUNDED = re.compile(r"(?<![\w.,])\d[\d,]*\.(\d{7,})(?![\w])|(?<![\w.,])0\.0*[1-9]\d{6,}(?!\w)")
_SCI = re.compile(r"(?<![\w.])\d+(\.\d+)?[eE][+-]?\d+(?!\w)")


def test_cells_are_rounded_plain_numbers(page):
    info, _, _ = page
    cells = info["cells"]
    assert cells
    assert not [c for c in cells if _UNROUNDED.search(c)], [c for c in cells if _UNROUNDED.search(c)][:10]
    assert not [c for c in cells if _SCI.search(c)], [c for c in cells if _SCI.search(c)][:10]
    assert not [c for c in cells if re.fullmatch(r"(None|nan|NaN|null|True|False)", c)]


def test_page_is_self_contained_and_screenshot_saved(page):
    info, _, path = page
    assert info["external"] == []
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
