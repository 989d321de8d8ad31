"""Cross-fitted synthesis, ``[synthesis] predictive = "cross_fit"`` (issue 25, item 1)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import synthgeo as sg
from synthgeo._errors import SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.config.model import SynthesisConfig
from synthgeo.pipeline.risk_stage import loo_predictive
from synthgeo.pipeline.run import run_release
from synthgeo.risk.loo import (
    baseline_loo,
    calibration_own_weight,
    exact_precision,
    loo_blocks,
    loo_conditional,
    nngp_precision,
)
from synthgeo.synthesis.cross_fit import (
    calibrate_covariates,
    draw_cross_fitted,
    implicate_sources,
    own_value_bound,
)
from synthgeo.synthesis.implicates import implicate_seeds
from synthgeo.testing import fake_fit


def _light(spec, **synthesis):
    return (spec.replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("synthesis", n_implicates=20, **synthesis))


@pytest.fixture(scope="module")
def cross_release():
    """The raw cross-fit (no calibration): its predictive is the LOO baseline itself.

    Judged against the baseline at the full posterior's draws (``loo_posterior = "full"``),
    where the in-sample identity holds; the default, the leave-out posterior, is
    tests/test_loo_posterior.py's.
    """
    spec = _light(load_spec(bundled_spec_path()), predictive="cross_fit",
                  cross_fit_calibration="none").replace("risk", loo_posterior="full")
    with pytest.warns(UserWarning):
        return sg.run(spec)  # the Release of synthgeo run, not yet written


@pytest.fixture(scope="module")
def calibrated_release():
    """The calibrated cross-fit (the default calibration), same seed as ``cross_release``."""
    spec = _light(load_spec(bundled_spec_path()), predictive="cross_fit")
    assert spec.synthesis.cross_fit_calibration == "covariates"
    with pytest.warns(UserWarning):
        return sg.run(spec)


def test_cross_fitted_predictive_is_the_brute_force_conditional(small_gp):
    """(a) Exact GP: mean and sd of each record given every record outside its site, at each
    implicate's draw, equal numpy's conditional from the full covariance (1e-8).
    """
    coords, X, y = small_gp["coords_m"], small_gp["X"], small_gp["y"]
    site = small_gp["sites"].site_index
    assert site[0] == site[1]  # a block of two records
    beta = np.array([[1.0, 0.5], [0.8, 0.6], [1.2, 0.4]])
    sigma2, phi, nugget = np.array([4.0, 2.5, 5.0]), np.array([12.7e-3, 5e-3, 2e-2]), \
        np.array([0.0625, 0.2, 0.01])
    blocks = loo_blocks(site)
    loo = baseline_loo(y, X, beta=beta, sigma2=sigma2, phi=phi, alpha=nugget / sigma2,
                       precision_of=exact_precision(coords), blocks=blocks)
    sources = implicate_sources(fake_fit(n_draw=30), 3)
    ds = draw_cross_fitted(loo.mean, loo.sd, sources=sources, random_seed=7)
    D = cdist(coords, coords)
    for ell in range(3):
        K = sigma2[ell] * np.exp(-phi[ell] * D) + nugget[ell] * np.eye(len(y))
        mu = X @ beta[ell]
        for i in range(len(y)):
            rest = blocks != blocks[i]
            w = np.linalg.solve(K[np.ix_(rest, rest)], K[rest, i])
            mean = mu[i] + w @ (y - mu)[rest]
            var = K[i, i] - K[i, rest] @ w
            assert ds["y_mean"].values[ell, i] == pytest.approx(mean, abs=1e-8)
            assert ds["y_sd"].values[ell, i] == pytest.approx(np.sqrt(var), abs=1e-8)
        z = np.random.default_rng(implicate_seeds(7, 3)[ell]).standard_normal(len(y))
        np.testing.assert_allclose(ds["y_synthetic"].values[ell],
                                   ds["y_mean"].values[ell] + ds["y_sd"].values[ell] * z,
                                   rtol=0, atol=1e-12)
    # the co-sited pair is left out together: neither sees the other's value
    y2 = y.copy()
    y2[1] += 10.0
    moved = baseline_loo(y2, X, beta=beta, sigma2=sigma2, phi=phi, alpha=nugget / sigma2,
                         precision_of=exact_precision(coords), blocks=blocks)
    np.testing.assert_allclose(moved.mean[:, 0], loo.mean[:, 0], rtol=0, atol=1e-9)


def test_draw_cross_fitted_refuses_bad_shapes():
    """One row per implicate, positive sd."""
    sources = implicate_sources(fake_fit(), 3)
    with pytest.raises(ValueError, match="one row per implicate"):
        draw_cross_fitted(np.zeros((2, 4)), np.ones((2, 4)), sources=sources, random_seed=1)
    with pytest.raises(ValueError, match="positive and finite"):
        draw_cross_fitted(np.zeros((3, 4)), np.zeros((3, 4)), sources=sources, random_seed=1)


def test_release_risk_equals_the_loo_baseline_at_the_same_draws(cross_release):
    """(b) In-sample, by construction: the release's RB risk is the LOO baseline's."""
    res = cross_release.result
    assert res.fits["restricted"] is res.fits["unrestricted"]  # no restricted refit
    ds = res.implicates["restricted"]
    assert ds.attrs["predictive"] == "cross_fit" and ds.attrs["calibration"] == "none"
    np.testing.assert_array_equal(ds["source_draw"].values,
                                  res.implicates["unrestricted"]["source_draw"].values)
    loo = loo_predictive(res.spec, res.data, res.fits["unrestricted"],
                         res.implicates["unrestricted"])
    np.testing.assert_array_equal(ds["y_mean"].values, loo.mean)
    np.testing.assert_array_equal(ds["y_sd"].values, loo.sd)
    rr = res.risk_scores.records["restricted"].per_record
    for key in rr["measure"].values:
        rel, base = rr["release"].sel(measure=key).values, rr["loo"].sel(measure=key).values
        np.testing.assert_array_equal(rel, base)
        assert np.all(rel - base <= 0)
        # the unrestricted (posterior predictive) model does carry risk above it
        ur = res.risk_scores.records["unrestricted"].per_record
        assert (ur["release"].sel(measure=key).values - base).max() > 0.01


def test_same_seed_same_bytes(cross_release):
    """(c) Same seed, same values; another seed, other values."""
    res = cross_release.result
    spec = res.spec
    with pytest.warns(UserWarning):
        again = run_release(spec)
    a = res.implicates["restricted"]["y_synthetic"].values
    assert a.tobytes() == again.implicates["restricted"]["y_synthetic"].values.tobytes()
    sources = implicate_sources(res.fits["unrestricted"], 20)
    ds = res.implicates["restricted"]
    other = draw_cross_fitted(ds["y_mean"].values, ds["y_sd"].values, sources=sources,
                              random_seed=spec.sampling.seed + 1)
    assert not np.array_equal(other["y_synthetic"].values, a)


@pytest.mark.slow
def test_bundled_spec_with_cross_fit_end_to_end(cross_release, tmp_path):
    """(d) The release is written: release.json says how, and validates; the report says so."""
    out = cross_release.write(tmp_path / "cf")
    rec = json.loads((out / "release.json").read_text())
    assert rec["spec"]["synthesis"]["predictive"] == "cross_fit"
    assert rec["synthesis"]["predictive"] == "cross_fit"
    assert rec["synthesis"]["restricted_fit"] is False
    assert rec["synthesis"]["leave_out_unit"] == "site"
    assert rec["synthesis"]["calibration"] == "none" and rec["synthesis"]["own_value_leak"] is None
    assert rec["detector"]["applicable"] is False  # nobody selected: nothing to detect
    assert "nobody is selected" in rec["detector"]["reason"]
    html = (out / "report.html").read_text()
    assert "id='detector-not-run'" in html
    assert "cross-fit-note" in html and "no restricted model is fitted" in html
    assert (out / "release" / "implicates.parquet").is_file()
    # new-user trial 2026-12-07: no table or figure shows the unrestricted fit as "restricted"
    assert "convergence, restricted" not in html and "restricted: E[D·w]" not in html
    assert "D = 0 at γ = ∞" not in html and "engine, restricted" not in html
    assert html.count("not fitted: the released implicates are cross-fitted") >= 2
    assert "convergence, cross_fitted" in html


def test_console_names_the_cross_fitted_implicates(cross_release, tmp_path, capsys):
    """The console's tables and lines say "cross_fitted", not "restricted" (none was fitted)."""
    import argparse
    import re

    from synthgeo.cli.run import write_and_report

    said: list[str] = []
    args = argparse.Namespace(overwrite=False, progressbar=False, strict=False)
    assert write_and_report(cross_release, tmp_path / "cf", args, said.append, 0.0) == 0
    text = "\n".join(said) + capsys.readouterr().out
    # "restricted" only as in "no restricted fit" / "unrestricted": never naming the release
    assert not re.findall(r".{0,30}(?<!un)(?<!no )restricted.{0,30}", text)
    assert "mean_cross_fitted" in text and "attack_share_cross_fitted" in text
    assert "(share, cross_fitted)" in text and "engine, cross_fitted" in text
    assert "cross_fitted   Intercept" in text or "cross_fitted Intercept" in text
    line = cross_release.result.general_utility.summary_line({"restricted": "cross_fitted"})
    assert "cross_fitted ratio" in line and not re.search(r"(?<!un)restricted", line)


@pytest.mark.slow
def test_calibrated_release_written(calibrated_release, tmp_path):
    """release.json of a calibrated cross-fit names the calibration and the own-value leak's
    aggregates (validated against the schema on writing)."""
    out = calibrated_release.write(tmp_path / "cal")
    syn = json.loads((out / "release.json").read_text())["synthesis"]
    assert syn["calibration"] == "covariates"
    leak = syn["own_value_leak"]
    assert leak == pytest.approx(calibrated_release.result.implicates["restricted"]
                                 .attrs["own_value_leak"])
    assert "calibrated" in syn["released"]


def test_spec_key_validated_and_exclusive():
    """An unknown value is refused; so are the restricted fit's keys beside cross_fit."""
    spec = load_spec(bundled_spec_path())
    assert spec.synthesis.predictive == "posterior"
    with pytest.raises(SpecError, match=r"\[synthesis\] predictive"):
        SynthesisConfig(predictive="loo")
    for section, key, value in (("model", "gamma", 1.0), ("model", "at_risk_effect", "kriged"),
                                ("model", "at_risk_weight", "continuous")):
        base = spec.replace("model", gamma=1.0) if key == "at_risk_weight" else spec
        with pytest.raises(SpecError, match=rf"{key}.*cross_fit"):
            base.replace(section, **{key: value}).replace("synthesis", predictive="cross_fit")
    ok = spec.replace("synthesis", predictive="cross_fit")
    assert ok.synthesis.predictive == "cross_fit"


def test_reachable_from_synthesize():
    """``sg.synthesize(..., synthesis=SynthesisConfig(predictive="cross_fit"))`` in memory."""
    import geopandas

    from synthgeo.testing import simulate_gp

    sim = simulate_gp(60, extent_m=4000.0, phi_per_m=3e-3, random_seed=7)
    lon = -121.45 + sim["coords_m"][:, 0] / 87_000.0
    lat = 38.55 + sim["coords_m"][:, 1] / 111_000.0
    pts = geopandas.GeoDataFrame({"log_price": 12.0 + sim["y"], "sqft": sim["X"][:, 1]},
                                 geometry=geopandas.points_from_xy(lon, lat), crs="EPSG:4326")
    rel = sg.synthesize(pts, response="log_price", covariates=["sqft"], implicates=6, seed=3,
                        sampling=sg.SamplingConfig(sampler="grid", draws=200),
                        synthesis=SynthesisConfig(predictive="cross_fit"))
    assert rel.spec.synthesis.predictive == "cross_fit"
    assert rel.result.implicates["restricted"].attrs["predictive"] == "cross_fit"
    assert rel.result.fits["restricted"] is rel.result.fits["unrestricted"]


def test_several_gaussian_responses_are_accepted_and_a_yes_no_one_refused(tmp_path):
    """Several gaussian responses are cross-fitted (tests/test_cross_fit_several.py); a yes/no
    response is refused when the spec is read (no closed-form leave-out predictive)."""
    text = (bundled_spec_path().read_text()
            .replace('response = "log_price"        # log-dollars', "")
            .replace('back_transform = "exp"        # dollars, for risk', "")
            .replace("[model]", '[[data.responses]]\nname = "log_price"\n\n'
                     '[[data.responses]]\nname = "sqft_living"\n\n[model]')
            .replace('covariates = ["sqft_living"]', "covariates = []")
            .replace("n_implicates = 100", 'n_implicates = 100\npredictive = "cross_fit"'))
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert load_spec(path).synthesis.predictive == "cross_fit"
    path.write_text(text.replace('name = "sqft_living"',
                                 'name = "sqft_living"\nfamily = "bernoulli"'))
    with pytest.raises(SpecError, match="cross_fit.*yes/no response `sqft_living`"):
        load_spec(path)


def _ols(X, Y):
    return np.linalg.lstsq(X, np.atleast_2d(Y).T, rcond=None)[0].T


def test_calibrate_covariates_matches_the_confidential_ols(small_gp):
    """Each implicate's calibrated means have the confidential OLS on X (1e-10); their residual
    against X is the raw means'; the raw means do not (the shift the calibration removes)."""
    coords, X, y = small_gp["coords_m"], small_gp["X"], small_gp["y"]
    beta = np.array([[1.0, 0.5], [0.8, 0.6], [1.2, 0.4]])
    sigma2, phi, nugget = np.array([4.0, 2.5, 5.0]), np.array([12.7e-3, 5e-3, 2e-2]), \
        np.array([0.0625, 0.2, 0.01])
    loo = baseline_loo(y, X, beta=beta, sigma2=sigma2, phi=phi, alpha=nugget / sigma2,
                       precision_of=exact_precision(coords),
                       blocks=loo_blocks(small_gp["sites"].site_index))
    mc = calibrate_covariates(loo.mean, y, X)
    conf = _ols(X, y)[0]
    for ell in range(3):
        np.testing.assert_allclose(_ols(X, mc[ell])[0], conf, rtol=0, atol=1e-10)
        assert np.abs(_ols(X, loo.mean[ell])[0] - conf).max() > 1e-3
    H = X @ np.linalg.solve(X.T @ X, X.T)
    np.testing.assert_allclose((mc - loo.mean) @ (np.eye(len(y)) - H), 0.0, atol=1e-10)
    with pytest.raises(ValueError, match="`mean` must be"):
        calibrate_covariates(loo.mean, y[:-1], X)
    with pytest.raises(ValueError, match="finite"):
        calibrate_covariates(np.full_like(loo.mean, np.nan), y, X)


@pytest.mark.parametrize("engine", ["exact", "nngp"])
def test_own_weight_is_the_derivative_of_the_calibrated_mean(small_gp, engine):
    """w_i = ∂μ^c_i/∂y_i (finite differences, 1e-7), with a co-sited block, dense and sparse Q."""
    coords, X, y = small_gp["coords_m"], small_gp["X"], small_gp["y"]
    blocks = loo_blocks(small_gp["sites"].site_index)
    Q = (exact_precision(coords) if engine == "exact" else
         nngp_precision(coords, n_neighbors=5))(8e-3, 0.3)
    beta = np.array([1.0, 0.5])

    def calibrated(yy):
        cond, _ = loo_conditional(yy - X @ beta, Q, blocks)
        return calibrate_covariates((X @ beta + cond)[None, :], yy, X)[0]

    w = calibration_own_weight(X, Q, blocks)
    base, h = calibrated(y), 1e-6
    fd = np.array([(calibrated(y + h * np.eye(len(y))[i])[i] - base[i]) / h
                   for i in range(len(y))])
    np.testing.assert_allclose(w, fd, rtol=0, atol=1e-7)
    assert 0 < np.abs(w).max() < 0.5  # O(p/n): two coefficients, 40 records


def test_own_value_bound_bounds_the_change_of_any_window(small_gp):
    """Replacing y_i by its leave-out mean moves the calibrated mean by w_i e_i, and every
    within-tolerance probability by at most the bound (brute force, several windows)."""
    from scipy.stats import norm

    coords, X, y = small_gp["coords_m"], small_gp["X"], small_gp["y"]
    blocks = loo_blocks(small_gp["sites"].site_index)
    Q = exact_precision(coords)(8e-3, 0.3)
    beta, sigma2 = np.array([1.0, 0.5]), 4.0
    cond, var = loo_conditional(y - X @ beta, Q, blocks)
    raw, sd = X @ beta + cond, np.sqrt(sigma2 * var)
    w = calibration_own_weight(X, Q, blocks)
    shift_sd, bound = own_value_bound(w[None], raw[None], sd[None], y)
    mc = calibrate_covariates(raw[None], y, X)[0]
    for i in range(len(y)):
        y2 = y.copy()
        y2[i] = raw[i]  # the record's own value replaced by what the others predict
        raw2 = X @ beta + loo_conditional(y2 - X @ beta, Q, blocks)[0]
        assert raw2[i] == pytest.approx(raw[i], abs=1e-10)  # μ̃_i does not depend on y_i
        mc2 = calibrate_covariates(raw2[None], y2, X)[0]
        assert mc[i] - mc2[i] == pytest.approx(w[i] * (y[i] - raw[i]), abs=1e-10)
        for eps in (0.01, 0.1, 0.5, 2.0):
            p1 = norm.cdf(y[i] + eps, mc[i], sd[i]) - norm.cdf(y[i] - eps, mc[i], sd[i])
            p2 = norm.cdf(y[i] + eps, mc2[i], sd[i]) - norm.cdf(y[i] - eps, mc2[i], sd[i])
            assert abs(p1 - p2) <= bound[i] + 1e-12
    assert shift_sd.max() == pytest.approx(bound.max() * np.sqrt(2 * np.pi))


def test_calibrated_release(calibrated_release, cross_release):
    """The pipeline: the released means have the confidential OLS at every implicate; the risk
    stage scores against the raw LOO baseline (not the released predictive); the own-value
    leak's aggregates are kept; the raw means at the same draws shift the coefficients."""
    res, raw = calibrated_release.result, cross_release.result
    ds = res.implicates["restricted"]
    assert ds.attrs["calibration"] == "covariates"
    X, y = res.data.X, res.data.y
    conf = _ols(X, y)[0]
    np.testing.assert_allclose(_ols(X, ds["y_mean"].values), np.tile(conf, (ds.sizes[
        "implicate"], 1)), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(ds["y_sd"].values, raw.implicates["restricted"]["y_sd"].values)
    rr = res.risk_scores.records["restricted"].per_record
    loo = raw.implicates["restricted"]["y_mean"].values  # the raw cross-fit = the baseline
    base = loo_predictive(res.spec, res.data, res.fits["unrestricted"],
                          res.implicates["unrestricted"])
    np.testing.assert_allclose(base.mean, loo, rtol=0, atol=1e-12)
    for key in rr["measure"].values:
        a = rr["release"].sel(measure=key).values - rr["loo"].sel(measure=key).values
        assert np.abs(a).max() > 0  # the calibration shift is scored, not assumed away
        assert a.max() < 0.1
    leak = ds.attrs["own_value_leak"]
    assert set(leak) == {"largest_weight", "mean_weight", "largest_shift_sd",
                         "largest_risk_bound", "n_records_bound_above_0_01"}
    assert 0 < leak["mean_weight"] <= leak["largest_weight"] < 1
    # the raw means' OLS is off the confidential (by a fraction of its se: the shift the
    # calibration removes; at L = 20 the draws' own noise, ~1/√L se, hides it in q̄)
    se = res.utility.set_index(["model", "term"]).loc["confidential", "se"].to_numpy()
    shift = (_ols(X, loo) - conf) / se
    assert np.abs(shift).max() > 0.02


def test_calibration_key_validated():
    """An unknown calibration is refused with the key named; so is "none" beside the posterior
    predictive (it would be silently ignored)."""
    with pytest.raises(SpecError, match=r"\[synthesis\] cross_fit_calibration"):
        SynthesisConfig(cross_fit_calibration="ols")
    spec = load_spec(bundled_spec_path())
    with pytest.raises(SpecError, match="cross_fit_calibration.*predictive = \"cross_fit\""):
        spec.replace("synthesis", cross_fit_calibration="none")
    raw = spec.replace("synthesis", predictive="cross_fit", cross_fit_calibration="none")
    assert raw.synthesis.cross_fit_calibration == "none"


@pytest.mark.parametrize("name", ["synthgeo.synthesis.cross_fit",
                                  "synthgeo.pipeline.detector_stage"])
def test_examples_run(name):
    """The Examples sections of the cross-fit and the detector stage run as written."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name),
                             extraglobs={"np": np}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_frontier_docs_block_is_what_the_benchmark_makes_from_its_record(benchmark_module):
    """docs/risk-and-utility.md "Comparing the mechanisms" comes from the newest --frontier
    record of bench_cross_fit (both data sets, every variant)."""
    mod = benchmark_module("bench_cross_fit")
    chosen = mod.newest_frontier_records()
    assert {(d, v) for d in mod.FRONTIER_DATA for v in mod.VARIANTS} <= set(chosen), \
        "a variant of the frontier's data sets has no --frontier record"
    text = mod.DOCS.read_text(encoding="utf-8")
    i, j = text.index(mod.FBEGIN), text.index(mod.FEND) + len(mod.FEND)
    assert text[i:j] == mod._frontier_table(chosen)
