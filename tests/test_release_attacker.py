"""The release attacker and input noise (issue 25: the neighbour signal, measured and bounded)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from scipy.stats import norm

import synthgeo as sg
from synthgeo._errors import SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.config.measure import Measure
from synthgeo.config.risk import RiskTarget
from synthgeo.pipeline.release_attack import information_with_mean_noise
from synthgeo.risk.loo import baseline_loo, exact_precision, loo_blocks
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import rb_risk
from synthgeo.risk.release_attacker import (
    attacker_predictive,
    block_inverse,
    implicate_budget,
    mechanism_map,
    release_information,
    unlimited_bound,
)
from synthgeo.synthesis.cross_fit import calibrate_covariates
from synthgeo.synthesis.input_noise import choose_kappa, noisy_response
from synthgeo.synthesis.mean_noise import choose_mean_noise, mean_noise

REL = Measure.parse("rel:0.1")


def _design(n=40, seed=0, shared_sites=True):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 3000, (n, 2))
    if shared_sites:  # a few records share a site: blocks of 2
        xy[1::7] = xy[0::7][: xy[1::7].shape[0]]
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    phi, alpha = 1 / 800.0, 0.3
    K = np.exp(-phi * cdist(xy, xy)) + alpha * np.eye(n)
    y = X @ [11.0, 0.3] + np.linalg.cholesky(K) @ rng.standard_normal(n) * 0.4
    site = np.unique(xy, axis=0, return_inverse=True)[1].ravel()
    return xy, X, y, phi, alpha, loo_blocks(site)


def _means(y, X, xy, phi, alpha, blocks, calibration):
    """The released means of one implicate at fixed θ, by the production code."""
    g = baseline_loo(y, X, beta=np.array([[11.0, 0.3]]), sigma2=np.array([0.16]),
                     phi=np.array([phi]), alpha=np.array([alpha]),
                     precision_of=exact_precision(xy), blocks=blocks)
    if calibration == "none":
        return g.mean[0], g.sd[0]
    m = calibrate_covariates(g.mean, y, X, leave_own_out=calibration == "covariates_loo")
    return m[0], g.sd[0]


@pytest.mark.parametrize("calibration", ["none", "covariates", "covariates_loo"])
def test_information_is_the_finite_difference_map(calibration):
    """M from the precision equals ∂(released means)/∂y of the production code, column by
    column, and I_i = Σ_j M_ji² w_j.
    """
    xy, X, y, phi, alpha, blocks = _design()
    n = y.size
    Q = exact_precision(xy)(phi, alpha)
    M0 = mechanism_map(Q, alpha, mechanism="cross_fit", blocks=blocks)
    base, _ = _means(y, X, xy, phi, alpha, blocks, calibration)
    M = np.empty((n, n))
    for i in range(n):
        y1 = y.copy()
        y1[i] += 1.0
        M[:, i] = _means(y1, X, xy, phi, alpha, blocks, calibration)[0] - base
    w = np.random.default_rng(1).uniform(50, 200, n)
    expect = (M ** 2 * w[:, None]).sum(axis=0)
    got = release_information(M0, X, w, calibration=calibration)
    np.testing.assert_allclose(got, expect, rtol=1e-8, atol=1e-10)
    if calibration == "none":  # a record's own block does not enter its own mean
        np.testing.assert_allclose(np.diag(M), 0.0, atol=1e-12)


def test_block_inverse_and_posterior_map():
    xy, X, y, phi, alpha, blocks = _design(n=15)
    Q = exact_precision(xy)(phi, alpha)
    Lam = block_inverse(Q, blocks).toarray()
    for b in np.unique(blocks):
        idx = np.flatnonzero(blocks == b)
        np.testing.assert_allclose(Lam[np.ix_(idx, idx)], np.linalg.inv(Q[np.ix_(idx, idx)]))
    K = np.exp(-phi * cdist(xy, xy))  # E[w | y] = K (K + αI)⁻¹ r: the smoother
    np.testing.assert_allclose(mechanism_map(Q, alpha, mechanism="posterior"),
                               K @ np.linalg.inv(K + alpha * np.eye(15)), atol=1e-10)
    with pytest.raises(ValueError, match="mechanism"):
        mechanism_map(Q, alpha, mechanism="kriged")


def test_gls_attacker_on_simulated_releases_matches_its_information():
    """The attacker built: GLS over every record's implicate means of simulated releases has
    standardised error ~ N(0, 1) with the information the module computes (so the risk it
    reports is the risk this attacker achieves).
    """
    xy, X, y, phi, alpha, blocks = _design(n=50, seed=3)
    n, L = y.size, 40
    Q = exact_precision(xy)(phi, alpha)
    M0 = mechanism_map(Q, alpha, mechanism="cross_fit", blocks=blocks)
    mean, sd = _means(y, X, xy, phi, alpha, blocks, "covariates_loo")
    M = (np.eye(n) - np.eye(n))  # dense M for the attacker, from the finite differences
    for i in range(n):
        y1 = y.copy()
        y1[i] += 1.0
        M[:, i] = _means(y1, X, xy, phi, alpha, blocks, "covariates_loo")[0] - mean
    info = release_information(M0, X, L / sd ** 2, calibration="covariates_loo")
    rng = np.random.default_rng(5)
    z = []
    for _ in range(40):  # 40 releases × 50 records
        ybar = mean + sd * rng.standard_normal((L, n)).mean(axis=0)
        for i in range(n):
            b, w = M[:, i], L / sd ** 2
            a = mean - b * y[i]  # what the others contribute (the attacker knows them)
            est = (w * b * (ybar - a)).sum() / (w * b * b).sum()
            z.append((est - y[i]) * np.sqrt(info[i]))
    z = np.array(z)
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.1


def test_attacker_predictive_limits_and_the_noise_bound():
    loo = Predictive(mean=np.full((3, 2), 11.0), sd=np.full((3, 2), 0.4))
    y = np.array([11.2, 10.7])
    same = attacker_predictive(loo, y, np.zeros(2))  # no information: the baseline
    np.testing.assert_allclose(same.mean, loo.mean)
    np.testing.assert_allclose(same.sd, loo.sd)
    exact = attacker_predictive(loo, y, np.full(2, np.inf))  # unlimited: the truth
    np.testing.assert_allclose(exact.mean, np.broadcast_to(y, (3, 2)))
    np.testing.assert_allclose(exact.sd, 0.0)
    capped = attacker_predictive(loo, y, np.full(2, np.inf), kappa=0.3)  # J = 1/κ²
    finite = attacker_predictive(loo, y, np.full(2, 1 / 0.09))
    np.testing.assert_allclose(capped.mean, finite.mean)
    np.testing.assert_allclose(capped.sd, finite.sd)
    point = attacker_predictive(loo, y, np.full(2, 5.0), point=True)
    assert np.all(point.sd < attacker_predictive(loo, y, np.full(2, 5.0)).sd)


def test_guess_distribution_is_the_bayes_attacker_by_simulation():
    """The attacker's guess (a draw from its normal posterior, given a GLS estimate
    N(y, 1/J)) hits the interval as often as the closed form says.
    """
    rng = np.random.default_rng(2)
    mu, s, y, J = 11.0, 0.35, 11.25, 20.0
    est = y + rng.standard_normal(200_000) / np.sqrt(J)
    prec = 1 / s ** 2 + J
    guess = (mu / s ** 2 + J * est) / prec + rng.standard_normal(est.size) / np.sqrt(prec)
    hit = np.mean((guess - y >= np.log(0.9)) & (guess - y <= np.log(1.1)))
    loo = Predictive(mean=np.array([[mu]]), sd=np.array([[s]]))
    closed = rb_risk(attacker_predictive(loo, np.array([y]), np.array([J])), np.array([y]), REL)
    assert closed[0] == pytest.approx(hit, abs=0.005)


def test_implicate_budget_is_the_first_crossing():
    loo = Predictive(mean=np.zeros((1, 3)), sd=np.array([[0.3, 0.5, 0.2]]))
    y = np.array([0.0, 0.1, -0.05])
    per = np.array([1.0, 0.5, 0.0])  # the third record is reached by nobody's mean
    base = rb_risk(loo, y, REL)

    def attributable(info):
        return rb_risk(attacker_predictive(loo, y, info), y, REL) - base

    budget = implicate_budget(lambda L: per * L, attributable, 0.10, max_implicates=10_000)
    assert budget[2] == 10_000
    grid = list(range(1, 17))
    while grid[-1] < 10_000:
        grid.append(min(10_000, int(np.ceil(grid[-1] * 1.25))))
    for i in range(2):  # within at its budget, above at the next grid value
        L = budget[i]
        assert L in grid and attributable(per * L)[i] <= 0.10
        assert attributable(per * grid[grid.index(L) + 1])[i] > 0.10


def test_choose_kappa_is_the_smallest_two_figure_noise_within_the_threshold():
    loo = Predictive(mean=np.array([[0.0, 0.2, -0.1]]), sd=np.array([[0.3, 0.25, 0.4]]))
    y = np.array([0.05, 0.0, 0.0])

    def risk_of(pred):
        return rb_risk(pred, y, REL)

    k = choose_kappa(lambda kappa: unlimited_bound(loo, y, kappa, risk_of), 0.05)
    assert unlimited_bound(loo, y, k, risk_of).max() <= 0.05
    step = 10 ** (np.floor(np.log10(k)) - 1)
    assert unlimited_bound(loo, y, k - step, risk_of).max() > 0.05
    np.testing.assert_array_equal(noisy_response(y, k, 7), noisy_response(y, k, 7))


def test_unlimited_bound_holds_for_an_attacker_who_knows_y_star():
    """Monte Carlo over the noise: the Bayes attacker who holds y*_i exactly (any number of
    implicates) hits as often as the bound says, and never more.
    """
    rng = np.random.default_rng(9)
    mu, s, y, kappa = 11.0, 0.3, 11.1, 0.25
    ystar = y + kappa * rng.standard_normal(200_000)
    prec = 1 / s ** 2 + 1 / kappa ** 2
    guess = (mu / s ** 2 + ystar / kappa ** 2) / prec + rng.standard_normal(ystar.size) / \
        np.sqrt(prec)
    hit = np.mean(np.abs(np.exp(guess - y) - 1) <= 0.1)
    loo = Predictive(mean=np.array([[mu]]), sd=np.array([[s]]))

    def risk_of(pred):
        return rb_risk(pred, np.array([y]), REL)

    bound = unlimited_bound(loo, np.array([y]), kappa, risk_of)[0] + risk_of(loo)[0]
    assert bound == pytest.approx(hit, abs=0.005)


def _bundled(**synthesis):
    spec = load_spec(bundled_spec_path())
    target = RiskTarget(measure="rel:0.1", max_attributable_record=0.10,
                        record_threshold=0.10, max_share_above=0.01)
    # input noise's separate calibration target goes with the plain calibration
    calibration = "covariates" if synthesis.get("input_noise") else "covariates_loo"
    return (spec.replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("risk", targets=[target], on_risk_failure="warn")
            .replace("synthesis", n_implicates=20, predictive="cross_fit",
                     cross_fit_calibration=calibration, **synthesis))


@pytest.mark.slow
def test_release_attacker_judged_and_input_noise_bounds_it(tmp_path):
    """The calibrated cross-fit fails against the release attacker on the bundled sales; with
    input noise "auto" the release attacker passes at L and its any-L bound is within the
    threshold; release.json, the verdict and the report carry both.
    """
    with pytest.warns(UserWarning):
        plain = sg.run(_bundled())
    checks = plain.result.risk_scores.verdict.checks
    assert {c.attacker for c in checks} == {"own_values", "release_attacker"}
    ra = [c for c in checks if c.attacker == "release_attacker"]
    assert any(c.status == "FAIL" for c in ra)
    summary = plain.result.release_attack.summary()
    assert summary["largest_attributable_any_implicates"] is None
    assert summary["smallest_implicate_budget"] is not None
    assert summary["smallest_implicate_budget"] <= 20  # within this release's L
    with pytest.warns(UserWarning):
        noisy = sg.run(_bundled(input_noise="auto"))
    s = noisy.result.release_attack.summary()
    assert s["input_noise_chosen"] == "auto" and s["input_noise_sd"] > 0
    assert s["largest_attributable_any_implicates"] <= 0.10
    assert s["largest_attributable"] <= s["largest_attributable_any_implicates"] + 1e-9
    assert all(c.status == "PASS" for c in noisy.result.risk_scores.verdict.checks
               if c.attacker == "release_attacker")
    out = noisy.write(tmp_path / "noisy")
    rec = json.loads((out / "release.json").read_text())
    assert rec["risk_release_attacker"]["judged"] is True
    assert rec["synthesis"]["input_noise"]["sd"] == s["input_noise_sd"]
    assert any(t["attacker"] == "release_attacker" for t in rec["verdicts"]["risk"]["targets"])
    html = (out / "report.html").read_text()
    assert "The release attacker" in html and "input noise" in html
    risk = (out / "confidential" / "risk_per_record.csv").read_text().splitlines()[0]
    assert "release_attacker_attributable" in risk


def test_input_noise_is_refused_where_it_means_nothing():
    spec = load_spec(bundled_spec_path())
    with pytest.raises(SpecError, match="input_noise"):
        spec.replace("synthesis", input_noise=0.2)  # the posterior predictive
    with pytest.raises(SpecError, match="input_noise"):
        spec.replace("synthesis", predictive="cross_fit", input_noise="auto")  # no target
    for bad in (-0.1, float("nan"), "big", True):
        with pytest.raises(SpecError, match="input_noise"):
            spec.replace("synthesis", predictive="cross_fit", input_noise=bad)
    with pytest.raises(SpecError, match="release_attacker"):
        spec.replace("risk", release_attacker="ignore")
    average = RiskTarget(measure="rel:0.1", attack="average", max_attributable_record=0.1)
    with pytest.raises(SpecError, match="share"):
        spec.replace("risk", targets=[average]).replace(
            "synthesis", predictive="cross_fit", input_noise="auto")


def test_an_input_noise_beyond_the_response_is_refused_and_mean_noise_capped_says_so():
    """A given sd far beyond the response's spread is refused (one line, no value of y); a
    mean noise above the implicates' spread is capped with a warning and recorded."""
    from synthgeo.pipeline.run import run_release
    with pytest.raises(SpecError, match="input_noise.*standard deviation") as err:
        run_release(_bundled(input_noise=1e6))
    assert "\n" not in str(err.value)
    with pytest.warns(UserWarning, match="capped"):
        res = run_release(_bundled(mean_noise=1e3))
    attrs = res.implicates["restricted"].attrs["mean_noise"]
    assert attrs["capped"] is True and attrs["chosen"] == "given"


def test_previous_with_input_noise_is_refused(tmp_path):
    from synthgeo.pipeline.run import run_release
    spec = _bundled(input_noise=0.3)
    with pytest.raises(SpecError, match="--previous"):
        run_release(spec, previous=tmp_path)


def test_norm_reference():  # the rel interval used above is [log 0.9, log 1.1]
    assert norm.cdf(np.log(1.1) / 0.3) - norm.cdf(np.log(0.9) / 0.3) == pytest.approx(
        rb_risk(Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3)), np.zeros(1),
                REL)[0])


def test_mean_noise_information_by_simulation():
    """With η common to a record's implicates the GLS attacker's precision is what
    information_with_mean_noise says (raw cross-fit: the kriging channel only), and it stays
    below Σ_j M_ji²/v as L grows.
    """
    xy, X, y, phi, alpha, blocks = _design(n=40, seed=4)
    n, L, v = y.size, 30, 0.02
    Q = exact_precision(xy)(phi, alpha)
    M0 = mechanism_map(Q, alpha, mechanism="cross_fit", blocks=blocks)
    mean, sd = _means(y, X, xy, phi, alpha, blocks, "none")
    s2 = sd ** 2 - v
    info = information_with_mean_noise(M0, X, s2, v, L, calibration="none")
    M = np.asarray(M0)
    rng = np.random.default_rng(8)
    z = []
    for _ in range(60):
        eta = np.sqrt(v) * rng.standard_normal(n)
        ybar = mean + eta + np.sqrt(s2) * rng.standard_normal((L, n)).mean(axis=0)
        w = 1 / (v + s2 / L)
        for i in range(n):
            b = M[:, i]
            est = (w * b * (ybar - (mean - b * y[i]))).sum() / (w * b * b).sum()
            z.append((est - y[i]) * np.sqrt(info[i]))
    assert 0.9 < np.std(z) < 1.1
    cap = release_information(M0, X, np.full(n, 1 / v), calibration="none")
    sparse = release_information(sp.csr_matrix(M0), X,
                                 np.full(n, 1 / v), calibration="covariates_loo")
    np.testing.assert_allclose(sparse, release_information(M0, X, np.full(n, 1 / v),
                                                           calibration="covariates_loo"))
    big = information_with_mean_noise(M0, X, s2, v, 10 ** 6, calibration="none")
    assert np.all(big <= cap * (1 + 1e-9)) and np.all(info < big)
    # the calibration's covariate channel is not reached by the noise: it grows with L
    cal = information_with_mean_noise(M0, X, s2, v, 10 ** 6, calibration="covariates")
    assert np.all(cal > cap)


def test_choose_mean_noise_and_its_draws():
    def info(v):
        return np.array([0.5, 0.2]) / (v + 0.01)

    def att(i):
        return i / (i + 10.0)

    v, ok = choose_mean_noise(info, att, 0.10, 1.0)
    assert ok and att(info(v)).max() <= 0.10
    sd = np.sqrt(v)
    step = 10 ** (np.floor(np.log10(sd)) - 1)
    assert att(info((sd - step) ** 2)).max() > 0.10
    assert choose_mean_noise(info, att, 0.10, 0.05) == (0.05, False)
    assert choose_mean_noise(lambda v: np.zeros(2), att, 0.10, 1.0) == (0.0, True)
    np.testing.assert_array_equal(mean_noise(5, 0.04, 3), mean_noise(5, 0.04, 3))
    assert not np.array_equal(mean_noise(5, 0.04, 3), mean_noise(5, 0.04, 4))


@pytest.mark.slow
def test_mean_noise_release_records_what_it_did(tmp_path):
    with pytest.warns(UserWarning):
        rel = sg.run(_bundled(mean_noise=0.1))
    attrs = rel.result.implicates["restricted"].attrs["mean_noise"]
    assert attrs == {"sd": pytest.approx(0.1), "variance": pytest.approx(0.01),
                     "chosen": "given", "n_records_sd_capped": 0, "capped": False,
                     "reached": None}
    u = rel.result.utility
    assert u.loc[u["model"] == "restricted", "ci_overlap"].min() > 0.8  # OLS kept by calibration
    out = rel.write(tmp_path / "mean")
    rec = json.loads((out / "release.json").read_text())
    assert rec["synthesis"]["mean_noise"]["sd"] == pytest.approx(0.1)
    assert rec["risk_release_attacker"]["mean_noise_sd"] == pytest.approx(0.1)
    with pytest.raises(SpecError, match="one of them"):
        _bundled(mean_noise=0.1, input_noise=0.1)


def test_docs_block_is_what_the_benchmark_makes_from_its_records(benchmark_module):
    """docs/risk-and-utility.md "The release attacker" comes from the benchmark's records."""
    mod = benchmark_module("bench_release_attacker")
    records = mod.newest_records()
    assert set(records) == set(mod.NAMES), "a data set has no bench_release_attacker record"
    text = mod.DOCS.read_text(encoding="utf-8")
    i, j = text.index(mod.BEGIN), text.index(mod.END) + len(mod.END)
    assert text[i:j] == mod.BEGIN + mod._block(records) + mod.END


def test_the_leave_out_cache_changes_no_figure(monkeypatch):
    """The run's cache of leave-out predictives (pipeline.loo_cache) serves the synthesis, the
    risk stage and every protect round: the same implicates, risk and verdict as without it."""
    import contextlib

    from synthgeo.pipeline import loo_cache, run as run_mod
    from synthgeo.pipeline.run import run_release
    target = RiskTarget(measure="rel:0.1", max_attributable_record=0.10, record_threshold=0.10,
                        max_share_above=0.01)
    spec = (load_spec(bundled_spec_path())
            .replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("synthesis", n_implicates=20)
            .replace("risk", targets=[target], on_risk_failure="warn", protect="targets"))
    calls = []
    real = loo_cache.cached_loo

    def counting(fit, data, draws, blocks, compute):
        def counted(todo):
            calls.append(sorted(todo))
            return compute(todo)
        return real(fit, data, draws, blocks, counted)

    monkeypatch.setattr("synthgeo.pipeline.risk_stage.cached_loo", counting)
    cached = run_release(spec)
    n_cached = len(calls)
    monkeypatch.setattr(run_mod, "run_scope", contextlib.nullcontext)
    calls.clear()
    plain = run_release(spec)
    assert n_cached < len(calls)  # computed fewer times with the cache
    for m in ("unrestricted", "restricted"):
        np.testing.assert_array_equal(cached.implicates[m]["y_synthetic"].values,
                                      plain.implicates[m]["y_synthetic"].values)
    pd_c = cached.risk_scores.per_record()
    pd_p = plain.risk_scores.per_record()
    # the same figures; the release attacker's map may be summed in another association
    # (kept by input noise, or built by the attacker): round-off, 1e-16
    import pandas as pd
    pd.testing.assert_frame_equal(pd_c, pd_p, check_exact=False, rtol=1e-12, atol=1e-14)
    def close(a, b) -> bool:  # equal, numbers to round-off
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
        if isinstance(a, float) and isinstance(b, float):
            return a == pytest.approx(b, rel=1e-12, abs=1e-14)
        return a == b

    assert close(cached.protection["rounds"], [
        {**r, "seconds": c["seconds"], "stage_seconds": c["stage_seconds"]}  # timings
        for r, c in zip(plain.protection["rounds"],
                                                       cached.protection["rounds"])])


def test_mean_noise_auto_records_whether_it_reached_the_target():
    """release.json's synthesis.mean_noise.reached says what choose_mean_noise found (it was
    overwritten with null)."""
    from synthgeo.pipeline.run import run_release
    with pytest.warns(UserWarning):
        res = run_release(_bundled(mean_noise="auto"))
    attrs = res.implicates["restricted"].attrs["mean_noise"]
    assert attrs["chosen"] == "auto" and attrs["reached"] in (True, False)


def test_noise_auto_is_chosen_against_the_judged_baseline_and_says_when_it_falls_short():
    """Input noise "auto": `reached` agrees with the judged any-L figure (both on the baseline
    the verdict scores). Mean noise "auto" that cannot reach the target warns, records
    reached = false and does not take the cap when a smaller noise does better."""
    from synthgeo.pipeline.run import run_release
    with pytest.warns(UserWarning):
        res = run_release(_bundled(input_noise="auto"))
    noise = res.implicates["restricted"].attrs["input_noise"]
    any_l = res.release_attack.summary()["largest_attributable_any_implicates"]
    assert noise["reached"] == (any_l <= 0.10)
    with pytest.warns(UserWarning, match="cannot bring the release attacker within"):
        res = run_release(_bundled(mean_noise="auto"))
    attrs = res.implicates["restricted"].attrs["mean_noise"]
    assert attrs["reached"] is False and attrs["capped"] is False


def test_protect_with_mean_noise_in_the_spec_runs_its_rounds():
    """protect's later rounds set their own noise: a spec with mean_noise is not refused for
    giving both noises."""
    from synthgeo.pipeline.protect import round_specs
    spec = _bundled(mean_noise=0.1).replace("risk", protect="targets")
    rounds = round_specs(spec)
    assert "mean noise (sd 0.1)" in rounds[0][0]
    assert [s.synthesis.mean_noise for _, s in rounds[1:]] == [0.0, 0.0, 0.0]
    assert rounds[-1][1].synthesis.input_noise == "auto"


def test_a_reported_release_attacker_above_the_target_is_in_the_warnings():
    from synthgeo.pipeline.run import run_release
    with pytest.warns(UserWarning, match="scored, not judged"):
        res = run_release(_bundled().replace("risk", release_attacker="report"))
    assert any(w["code"] == "release_attacker_not_judged" for w in res.risk_scores.warnings)
    assert all(c.attacker == "own_values" for c in res.risk_scores.verdict.checks)


def test_weighted_sum_of_maps_adds_same_pattern_values_as_sparse_addition():
    """The NNGP cells' maps share a pattern: adding their values equals sparse addition."""
    from synthgeo.pipeline.release_attack import weighted_sum
    from synthgeo.risk.loo import nngp_precision

    xy = np.random.default_rng(4).uniform(0, 3000, (60, 2))
    pf = nngp_precision(xy, n_neighbors=5)
    parts = [(mechanism_map(pf(p, a), a, mechanism="posterior"), w)
             for p, a, w in [(1e-3, 0.1, 0.5), (2e-3, 0.3, 0.3), (3e-3, 0.05, 0.2)]]
    want = parts[0][0] * 0.5 + parts[1][0] * 0.3 + parts[2][0] * 0.2
    got = weighted_sum(parts)
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    other = sp.csr_matrix(np.eye(60))  # another pattern: sparse addition
    mixed = weighted_sum([(parts[0][0], 1.0), (other, 2.0)])
    np.testing.assert_array_equal(mixed.toarray(), (parts[0][0] + 2.0 * other).toarray())


def test_the_precision_function_is_built_once_per_run(monkeypatch):
    """Within one run the NNGP graph and pattern are made once for every stage that asks."""
    from synthgeo.pipeline import loo_cache

    built = []

    def build():
        built.append(1)
        return object()

    data = object()
    assert loo_cache.cached_precision_function(data, 15, build) is not \
        loo_cache.cached_precision_function(data, 15, build)  # outside a run: every time
    built.clear()
    with loo_cache.run_scope():
        first = loo_cache.cached_precision_function(data, 15, build)
        assert loo_cache.cached_precision_function(data, 15, build) is first
        assert loo_cache.cached_precision_function(data, 10, build) is not first
        assert loo_cache.cached_precision_function(object(), 15, build) is not first
    assert len(built) == 3


def test_a_large_precision_pattern_is_let_go_before_scoring_and_built_again(monkeypatch):
    """drop_precision_function: large patterns are rebuilt on the next ask; small ones kept."""
    import types

    from synthgeo import _spill
    from synthgeo.pipeline import loo_cache

    built = []

    def build():
        built.append(1)
        return object()

    data = types.SimpleNamespace(n_records=1000)
    with loo_cache.run_scope():
        first = loo_cache.cached_precision_function(data, 15, build)
        monkeypatch.setattr(_spill, "SPILL_BYTES", 10**9)  # 1000 · 16² · 2 bytes: small
        assert not loo_cache.drop_precision_function(data, 15)
        assert loo_cache.cached_precision_function(data, 15, build) is first
        monkeypatch.setattr(_spill, "SPILL_BYTES", 1000)
        assert loo_cache.drop_precision_function(data, 15)
        assert loo_cache.cached_precision_function(data, 15, build) is not first
    assert len(built) == 2
    assert not loo_cache.drop_precision_function(data, 15)  # outside a run: nothing kept
