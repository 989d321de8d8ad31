"""The report: kriged surfaces against brute force, figures on hand-made inputs, sections."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from synthgeo.release.report import _figures as F
from synthgeo.release.report import (
    _surface,
    grid_over,
    posterior_mean_surface,
    render_report,
    riskiest_records,
    section_locations,
    section_surfaces,
)
from synthgeo.release.report._html import CONFIDENTIAL_LINE, table

PNG = b"\x89PNG\r\n\x1a\n"


def _png(uri: str) -> bytes:
    assert uri.startswith("data:image/png;base64,")
    raw = base64.b64decode(uri.split(",", 1)[1], validate=True)
    assert raw[:8] == PNG
    return raw


# --- kriged surface ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_draws():
    rng = np.random.default_rng(3)
    sites = rng.uniform(0, 2000, size=(12, 2))
    w = rng.normal(size=(7, 12))
    phi = rng.uniform(1 / 1500, 1 / 300, size=7)
    return sites, w, phi


def test_surface_equals_brute_force_kriging(toy_draws):
    sites, w, phi = toy_draws
    grid = np.array([[100.0, 200.0], [1500.0, 40.0], [999.0, 1999.0]])
    got = posterior_mean_surface(sites, w, phi, grid)
    want = np.zeros(len(grid))
    for k in range(len(phi)):
        R = np.exp(-phi[k] * cdist(sites, sites))
        r0 = np.exp(-phi[k] * cdist(grid, sites))
        want += r0 @ np.linalg.solve(R, w[k])
    np.testing.assert_allclose(got, want / len(phi), rtol=1e-6)


def test_surface_interpolates_the_sites(toy_draws):
    """Kriging is exact at the data: at a site the surface is that site's posterior mean."""
    sites, w, phi = toy_draws
    got = posterior_mean_surface(sites, w, phi, sites)
    np.testing.assert_allclose(got, w.mean(axis=0), atol=1e-5)


def test_surface_thins_to_max_draws_evenly(toy_draws):
    sites, w, phi = toy_draws
    grid = np.array([[10.0, 10.0]])
    got = posterior_mean_surface(sites, w, phi, grid, max_draws=3)
    take = [0, 3, 6]
    want = posterior_mean_surface(sites, w[take], phi[take], grid)
    np.testing.assert_allclose(got, want)


def test_nearest_neighbour_path_with_all_sites_equals_exact(toy_draws, monkeypatch):
    sites, w, phi = toy_draws
    grid = grid_over(sites, n_cells=6)[2]
    exact = posterior_mean_surface(sites, w, phi, grid)
    monkeypatch.setattr(_surface, "MAX_SITES_EXACT", 0)
    nn_all = posterior_mean_surface(sites, w, phi, grid, n_neighbors=12)
    np.testing.assert_allclose(nn_all, exact, rtol=1e-6, atol=1e-9)
    nn_few = posterior_mean_surface(sites, w, phi, grid, n_neighbors=8)
    assert np.max(np.abs(nn_few - exact)) < 0.5 * np.max(np.abs(exact))


def test_nearest_neighbour_kriging_falls_back_to_lu_for_flagged_blocks(toy_draws, monkeypatch):
    """Blocks the compiled Cholesky flags are solved by LU: the same surface either way."""
    from synthgeo.model import vecchia_kernel
    from synthgeo.model.kriging import krige

    sites, w, phi = toy_draws
    grid = grid_over(sites, n_cells=6)[2]
    compiled = krige(sites, w, phi, grid, n_neighbors=8)
    factor_rows = vecchia_kernel.factor_rows

    def all_failed(*args, **kwargs):
        b, F, failed = factor_rows(*args, **kwargs)
        return b, F, np.ones_like(failed)

    monkeypatch.setattr(vecchia_kernel, "factor_rows", all_failed)
    np.testing.assert_allclose(krige(sites, w, phi, grid, n_neighbors=8), compiled,
                               rtol=1e-9, atol=1e-12)


def test_surface_refuses_bad_shapes(toy_draws):
    sites, w, phi = toy_draws
    with pytest.raises(ValueError, match=r"`w` must have shape \(n_draws, n_sites\)"):
        posterior_mean_surface(sites, w[:, :5], phi, sites)
    with pytest.raises(ValueError, match="positive"):
        posterior_mean_surface(sites, w, -phi, sites)


def test_grid_covers_the_points_with_square_cells():
    pts = np.array([[0.0, 0.0], [4000.0, 1000.0], [2000.0, 500.0]])
    xs, ys, grid = grid_over(pts, n_cells=40, pad=0.05)
    assert grid.shape == (len(xs) * len(ys), 2)
    assert xs.min() < 0 < 4000 < xs.max() and ys.min() < 0 < 1000 < ys.max()
    assert len(xs) == 40
    np.testing.assert_allclose(np.diff(xs)[0], np.diff(ys)[0], rtol=0.15)


# --- record choice and figures ----------------------------------------------------------------


def test_riskiest_records_puts_at_risk_first():
    risk = np.array([0.9, 0.1, 0.5, 0.8, 0.3, 0.7, 0.2])
    at_risk = np.array([False, True, False, False, True, False, False])
    got = riskiest_records(risk, at_risk, n_at_risk=4, n_total=5)
    assert got.tolist() == [4, 1, 0, 3, 5]
    assert riskiest_records(risk, np.zeros(7, bool), n_total=3).tolist() == [0, 3, 5]


def test_every_figure_renders_to_png():
    rng = np.random.default_rng(0)
    coords = rng.uniform(0, 5000, (30, 2))
    at_risk = np.zeros(30, bool)
    at_risk[[2, 7]] = True
    xs, ys, _ = grid_over(coords, n_cells=10)
    surf = {"unrestricted": rng.normal(size=(len(ys), len(xs))),
            "restricted": rng.normal(size=(len(ys), len(xs)))}
    summary = pd.DataFrame({
        "group": ["at_risk", "other", "all"], "measure": ["within 10%"] * 3,
        "n_records": [2, 28, 30], "mean_unrestricted": [0.6, 0.2, 0.23],
        "mean_restricted": [0.1, 0.18, 0.17], "reduction": [5 / 6, 0.1, 0.26],
    })
    util = pd.DataFrame({
        "model": ["confidential", "restricted"], "term": ["Intercept"] * 2,
        "estimate": [1.0, 1.1], "lower": [0.8, 0.85], "upper": [1.2, 1.35],
        "ci_overlap": [np.nan, 0.7],
    })
    figs = [
        F.plot_record_map(coords, at_risk, 800.0, crs_name="UTM"),
        F.plot_surfaces(xs, ys, surf, coords, at_risk),
        F.plot_synthetic_histograms(
            [{"title": "id 1", "truth": 100_000.0,
              "synthetic": {"unrestricted": rng.normal(100_000, 5_000, 50),
                            "restricted": rng.normal(130_000, 30_000, 50)}}],
            eps=10_000, p=0.1),
        F.plot_risk_by_group(summary),
        F.plot_risk_distribution({"within 10%": {"unrestricted": rng.uniform(size=30),
                                                 "restricted": rng.uniform(size=30)}}, at_risk),
        F.plot_reiter_intervals(util),
        F.plot_spatial_k_histogram(np.array([1, 1, 1, 2, 3, 3, 7]), k=3, radius_m=100.0),
    ]
    for fig in figs:
        raw = _png(F.to_data_uri(fig))
        assert len(raw) > 2000


def test_rank_plot_of_two_models():
    import arviz as az

    rng = np.random.default_rng(1)
    idata = az.from_dict(posterior={"sigma2": rng.normal(size=(2, 50)),
                                    "range": rng.normal(size=(2, 50))})
    fig = F.plot_rank({"unrestricted": idata, "restricted": idata}, ["sigma2", "range"])
    assert len(fig.axes) == 4
    _png(F.to_data_uri(fig))


def test_table_escapes_and_formats():
    html = table(pd.DataFrame({"a": ["<b>", "x"], "v": [np.nan, np.inf]}), id="t")
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert "—" in html and "∞" in html and "id='t'" in html


# --- location diagnostics (ReleaseResult.locations arrives with issue 5) ----------------------


def test_locations_section_from_a_hand_made_dict():
    sk = np.array([1, 1, 1, 2, 2, 4, 6, 6, 9, 12])
    sec = section_locations({
        "spatial_k": sk, "radius_m": 100.0, "k": 3,
        "outlier_labels": ["ok"] * 6 + ["merge"] * 2 + ["generalise", "suppress"],
        "worst_offenders": pd.DataFrame({"id": [1, 2, 3], "spatial_k": [1, 1, 1]}),
        "policy": {"k": 3, "r_max_m": 500.0, "max_suppressed_share": 0.01},
    })
    assert sec is not None and sec.id == "locations"
    body = sec.body
    assert "within 100 m" in body and "threshold k = 3" in body
    # summary computed from spatial_k: 5 of 10 records below k = 3
    summary = re.search(r"<table id='table-spatial-k'>(.*?)</table>", body, re.S).group(1)
    assert "records below k = 3</td><td class='num'>5<" in summary
    assert "share below k</td><td class='num'>0.5<" in summary
    assert "min</td><td class='num'>1<" in summary
    policy = re.search(r"<table id='table-outlier-policy'>(.*?)</table>", body, re.S).group(1)
    assert "<td>ok</td><td class='num'>6</td>" in policy
    assert "<td>merge</td><td class='num'>2</td>" in policy
    assert "<td>suppress</td><td class='num'>1</td>" in policy
    assert "table-worst-offenders" in body and "table-outlier-parameters" in body
    _png(re.search(r"src='(data:image/png;base64,[^']+)'", body).group(1))


def test_locations_section_skips_when_absent():
    assert section_locations(None) is None
    assert section_locations({}) is None


def test_locations_section_accepts_frames_and_a_given_summary():
    frame = pd.DataFrame({"spatial_k": [1, 3, 3]})
    sec = section_locations({"spatial_k": frame, "summary": {"median": 3},
                             "outlier_policy": pd.DataFrame({"label": ["ok"], "records": [3]})})
    assert "median</td><td class='num'>3<" in sec.body
    assert "table-outlier-policy" in sec.body


# --- the whole page on a fast fake release ----------------------------------------------------


@pytest.fixture(scope="module")
def fake_result():
    from synthgeo.testing import fake_release_result

    return fake_release_result()


@pytest.fixture(scope="module")
def fake_html(fake_result):
    return render_report(fake_result)


def test_report_first_line_is_confidential(fake_html):
    assert fake_html.splitlines()[0] == CONFIDENTIAL_LINE
    assert "CONFIDENTIAL" in fake_html.splitlines()[0]


def test_report_has_every_section_and_embeds_every_image(fake_html):
    for sid in ("overview", "at-risk", "surfaces", "histograms", "risk", "neighbours",
                "utility", "general-utility", "convergence", "locations"):
        assert f"<section id='{sid}'>" in fake_html
    for tid in ("table-key-figures", "table-overview", "table-versions", "table-risk",
                "table-utility", "table-convergence", "table-at-risk-sensitivity",
                "table-at-risk-effects", "table-neighbour-check", "table-pmse-pooled",
                "table-pmse-variables"):
        assert f"<table id='{tid}'>" in fake_html
    srcs = re.findall(r"<img [^>]*src='([^']+)'", fake_html)
    # map, surfaces, histograms, 2 risk, utility, pMSE region map, rank, spatial k
    assert len(srcs) == 9
    assert "id='fig-pmse-regions'" in fake_html
    for src in srcs:
        _png(src)
    # self-contained: nothing is fetched
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", fake_html)
    assert "<script" not in fake_html and "<link" not in fake_html
    # the location diagnostics of the released points (ReleaseResult.locations)
    assert "outlier" in fake_html.split("<section id='locations'>")[1]


def test_converged_report_has_no_preview_warning(fake_result, fake_html):
    assert all(f.convergence.passed for f in fake_result.fits.values())
    assert "preview-warning" not in fake_html


def test_unconverged_report_says_preview_only():
    from synthgeo.testing import fake_release_result

    bad = fake_release_result(n_draws=40)  # too few draws: ESS below 100 per chain
    assert not bad.fits["unrestricted"].convergence.passed
    html = render_report(bad)
    assert "<p class='conf' id='preview-warning'>PREVIEW ONLY" in html


def test_report_shows_the_location_section_when_present(fake_result):
    class WithLocations:
        locations = {"spatial_k": np.ones(fake_result.data.n_records, int), "k": 2,
                     "radius_m": 100.0}

        def __getattr__(self, name):
            return getattr(fake_result, name)

    html = render_report(WithLocations())
    assert "<section id='locations'>" in html
    assert "Not in this report" not in html


def test_restricted_effect_is_zero_at_at_risk_sites(fake_result):
    """γ = ∞: D = 0 at at-risk sites, so no spatial effect reaches their synthetic values."""
    sec = section_surfaces(fake_result, n_cells=12, max_draws=20)
    tab = re.search(r"<table id='table-at-risk-effects'>(.*?)</table>", sec.body, re.S).group(1)
    rows = re.findall(r"<tr><td>[^<]*</td><td class='num'>([^<]+)</td>"
                      r"<td class='num'>([^<]+)</td></tr>", tab)
    assert len(rows) == len(np.unique(
        fake_result.data.sites.site_index[fake_result.at_risk.at_risk]))
    assert all(float(r) == 0.0 for _, r in rows)
    assert any(abs(float(u)) > 0.01 for u, _ in rows)


def test_surface_section_skips_without_effects(fake_result):
    class NoW:
        fits = {"unrestricted": object(), "restricted": object()}

        def __getattr__(self, name):
            return getattr(fake_result, name)

    assert section_surfaces(NoW()) is None


# --- escaping (jinja2 autoescape) and the key-figures table -----------------------------------

HOSTILE = "<script>alert('x')</script>"


def test_figure_caption_alt_and_id_are_escaped():
    from synthgeo.release.report._html import img

    html = str(img("data:image/png;base64,AAAA", alt=HOSTILE, id=HOSTILE, caption=HOSTILE))
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 3
    with pytest.raises(ValueError, match="embedded data: URIs"):
        img("https://example.org/x.png", alt="a", id="f")


def test_table_escapes_column_names_and_its_id():
    html = str(table(pd.DataFrame({HOSTILE: [HOSTILE], "long_column_name": [1.5]}), id=HOSTILE))
    assert "<script" not in html
    assert html.count("&lt;script&gt;") == 3  # id, column name, value
    assert "<th>long_<wbr>column_<wbr>name</th>" in html  # our own markup is kept


def test_every_value_on_the_page_is_escaped(fake_result):
    """Spec path (title and subtitle), record ids, column names and values all come out escaped."""
    import dataclasses
    from pathlib import Path

    in_path = "<img src=x onerror=alert(1)>"  # no "/": it stays in the file name
    spec = dataclasses.replace(fake_result.spec, source=Path(f"/tmp/{in_path}.toml"))
    worst = pd.DataFrame({HOSTILE: [HOSTILE], "spatial_k": [1]})

    class Hostile:
        locations = {"spatial_k": np.ones(fake_result.data.n_records, int), "k": 2,
                     "radius_m": 100.0, "worst_offenders": worst,
                     "summary": {HOSTILE: 1}, "outlier_labels": [HOSTILE] * 3}

        def __getattr__(self, name):
            return spec if name == "spec" else getattr(fake_result, name)

    html = render_report(Hostile())
    assert "<script" not in html
    title = re.search(r"<title>(.*?)</title>", html).group(1)
    assert "<img src=x" not in html
    assert title == "synthgeo report: &lt;img src=x onerror=alert(1)&gt;.toml"
    subtitle = re.search(r"<h1>synthgeo release report</h1><p>(.*?)</p>", html).group(1)
    assert "<code>/tmp/&lt;img src=x onerror=alert(1)&gt;.toml</code>" in subtitle
    loc = html.split("<section id='locations'>")[1]
    # worst offenders: column name and value; the summary's item; the one outlier label
    assert loc.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 4


def test_key_figures_box_is_the_key_figures_table(fake_result, fake_html):
    from synthgeo.release.report import key_figures

    kf = key_figures(fake_result)
    assert list(kf.columns) == ["item", "value", "status"]
    box = re.search(r"<table id='table-key-figures'>(.*?)</table>", fake_html, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", box)
    assert len(rows) == len(kf)
    from html import unescape

    for (item, value), row in zip(rows, kf.itertuples()):
        assert unescape(item) == row.item and "<" not in item
        if row.status:
            assert value.startswith(f"<span class='{row.status}'>") and value.endswith("</span>")
            value = value[len(f"<span class='{row.status}'>"):-len("</span>")]
        assert unescape(value) == row.value and "<" not in value
    # the risk verdict first (no targets: NOT ASSESSED, never PASS), then N
    assert kf.iloc[0]["item"] == "risk verdict (released model)"
    assert kf.iloc[0]["value"].startswith("NOT ASSESSED")
    assert kf.iloc[1].tolist() == ["records (N)", f"{fake_result.data.n_records:,}", ""]
    assert kf["item"].str.startswith("location verdict").sum() == 1
    # every measure x attack, all and at-risk records, both models beside the baseline
    risk = kf[kf["value"].str.contains(": release ")]
    assert len(risk) == 2 * 2 * 2
    assert risk["value"].str.contains("baseline").all()
    assert risk["value"].str.contains("attributable").all()
    # no [risk.targets]: no colour, and the words say so (colour never compares the models)
    assert set(risk["status"]) == {""}
    assert risk["value"].str.startswith(("no target set:", "no target of its own")).all()
    assert not risk["value"].str.contains("worse").any()
    # the models' difference is read against its Monte Carlo noise, restricted − unrestricted
    assert risk["value"].str.contains(
        r"restricted − unrestricted [+-]\d+\.\d pp ± \d+\.\d pp: (?:no difference beyond "
        r"Monte Carlo noise|restricted (?:lower|higher))").all()
    share = risk[risk["item"].str.contains("Rao-Blackwellised")]
    assert share["value"].str.contains(r"largest per-record a_i -?\d\.\d{3} → -?\d\.\d{3} "
                                       r"\(upper bound").all()
    # a 0/1 attack reports a rate, never a "largest" (of 1)
    average = risk[risk["item"].str.contains("rate of records hit")]
    assert len(average) == 4 and not average["value"].str.contains("largest").any()
    conv = kf[kf["item"].str.startswith("convergence")]
    assert conv["value"].tolist() == ["passed", "passed"] and set(conv["status"]) == {"ok"}


def test_key_figures_colour_and_words_are_the_status_against_the_targets(fake_result):
    """A target FAIL is red with "FAIL" in words, a PASS green with "PASS"; no target: plain."""
    from types import SimpleNamespace

    from synthgeo.config.risk import RiskTarget
    from synthgeo.release.report import key_figures
    from synthgeo.risk.verdict import assess_risk

    scores = fake_result.risk_scores
    keys = [m.key for m in scores.measures]
    assert scores.summary.record_attributable("restricted", keys[0]).max() > 0
    targets = [RiskTarget(measure=keys[0], max_attributable_record=0.0),
               RiskTarget(measure=keys[1], max_attributable_record=1.0)]
    verdict = assess_risk(scores.summary, targets)
    assert [c.status for c in verdict.checks] == ["FAIL", "PASS"]

    class WithTargets:
        risk_scores = SimpleNamespace(**{k: getattr(scores, k) for k in (
            "table", "measures", "summary", "joint", "identifiable")}, verdict=verdict)

        def __getattr__(self, name):
            return getattr(fake_result, name)

    kf = key_figures(WithTargets())
    rows = kf[kf["item"].str.contains("Rao-Blackwellised") & kf["item"].str.contains(
        "all records")]
    assert rows["status"].tolist() == ["warn", "ok"]
    assert rows["value"].iloc[0].startswith("FAIL: misses the board's target")
    assert rows["value"].iloc[1].startswith("PASS: meets the board's target")
    others = kf[kf["value"].str.contains(": release ") & ~kf.index.isin(rows.index)]
    assert set(others["status"]) == {""}
    assert others["value"].str.startswith(("no target set:", "no target of its own")).all()


def test_every_template_is_package_data():
    """A template the wheel would leave out fails here, not on a user's machine."""
    import tomllib
    from pathlib import Path

    import synthgeo

    root = Path(synthgeo.__file__).parent
    config = tomllib.loads((root.parents[1] / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["synthgeo"]
    shipped = {p for g in globs for p in root.glob(g)}
    templates = {p for p in (root / "release" / "templates").rglob("*") if p.is_file()}
    assert templates and templates <= shipped, sorted(map(str, templates - shipped))


def test_histogram_records_are_chosen_without_selection_bias(fake_result, fake_html):
    """Check at-risk records come first, then by the larger of the two models' RB risk.

    The caption says so, and the attributable table shows both baselines for both models.
    """
    import html as html_lib

    from synthgeo.risk.selection import HISTOGRAM_RULE

    caption = re.search(r"<p class='caption' id='histogram-rule'>(.*?)</p>", fake_html).group(1)
    assert html_lib.unescape(caption) == HISTOGRAM_RULE[0].upper() + HISTOGRAM_RULE[1:] + "."
    sel = fake_result.risk_scores.histogram_selection(fake_result.at_risk.at_risk, n=8)
    n_risk = int(fake_result.at_risk.at_risk.sum())
    assert sel.at_risk[:min(n_risk, 8)].all()
    rest = sel.key[n_risk:]
    assert (np.diff(rest) <= 0).all()
    table = re.search(r"<table id='table-risk-attributable'>(.*?)</table>", fake_html, re.S)
    head = table.group(1).splitlines()[0].replace("<wbr>", "")
    for col in ("release", "baseline_loo", "baseline_public", "attributable"):
        assert f"<th>{col}</th>" in head
    body = table.group(1)
    assert body.count("<td>unrestricted</td>") == body.count("<td>restricted</td>") == 8
