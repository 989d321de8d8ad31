"""Input noise's separate calibration target and own-value risk over the noise (issue 25)."""

import dataclasses

import numpy as np
import pytest

from synthgeo._errors import SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.config.measure import Measure
from synthgeo.config.risk import RiskTarget
from synthgeo.pipeline import synthesis_noise
from synthgeo.pipeline.release_attack import attributable_function
from synthgeo.pipeline.run import run_release
from synthgeo.risk.predictive import Predictive
from synthgeo.synthesis.cross_fit import leverage
from synthgeo.synthesis.input_noise import (
    OLS_INFORMATION_SHARE,
    choose_kappa,
    ols_noise_sd,
    separate_target,
)

TARGET = RiskTarget(measure="rel:0.1", max_attributable_record=0.10, record_threshold=0.10,
                    max_share_above=0.01)


def _spec(kappa=0.3, **synthesis):
    spec = load_spec(bundled_spec_path())
    return (spec.replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("risk", targets=[TARGET], on_risk_failure="warn")
            .replace("synthesis", **{"n_implicates": 20, "predictive": "cross_fit",
                                     "cross_fit_calibration": "covariates",
                                     "input_noise": kappa, "input_noise_ols": "separate",
                                     **synthesis}))


def test_separate_target_with_the_leave_own_out_calibration_is_refused():
    with pytest.raises(SpecError, match="covariates_loo.*full-rank"):
        _spec(cross_fit_calibration="covariates_loo")
    _spec(cross_fit_calibration="covariates_loo", input_noise_ols="shared")  # allowed
    _spec(cross_fit_calibration="covariates_loo", input_noise_ols="auto")  # shared there
    with pytest.raises(SpecError, match="input_noise_ols"):
        _spec(input_noise_ols="both")
    with pytest.raises(SpecError, match="input_noise_reading"):
        load_spec(bundled_spec_path()).replace("risk", input_noise_reading="luck")


def test_ols_noise_bounds_the_calibration_channel():
    """h_ii/κ_β² ≤ share/κ² for every record, with equality at the largest leverage."""
    X = np.column_stack([np.ones(50), np.random.default_rng(0).exponential(size=50)])
    h = leverage(X)
    ols = ols_noise_sd(0.4, h)
    info = h / ols ** 2
    assert info.max() == pytest.approx(OLS_INFORMATION_SHARE / 0.4 ** 2)
    assert (info <= OLS_INFORMATION_SHARE / 0.4 ** 2 + 1e-12).all()
    with pytest.raises(ValueError, match="share"):
        ols_noise_sd(0.4, h, share=0.0)


def test_the_calibration_reads_no_value_more_precisely_than_y_star():
    """Share 1 (decided 2026-12-07): each record's reading through the calibration,
    y_i + (He_β)_i/h_ii, has sd κ_β/√h_ii ≥ κ, with equality at the largest leverage."""
    X = np.column_stack([np.ones(80), np.random.default_rng(1).exponential(size=(80, 2))])
    h = leverage(X)
    reading_sd = ols_noise_sd(0.4, h) / np.sqrt(h)
    assert reading_sd.min() == pytest.approx(0.4)
    assert (reading_sd >= 0.4 - 1e-12).all()


def test_auto_keeps_the_separate_target_to_small_leverage():
    """The "auto" rule stays max h ≤ 1/16 whatever the share: a design with max h = 0.1
    (separate at share 1 would have κ_β ≈ κ/3) keeps the shared target."""
    h = np.array([0.1, 0.01, 0.01])
    assert not separate_target("auto", "covariates", h)
    assert separate_target("auto", "covariates", np.array([1 / 16, 0.01]))
    assert separate_target("separate", "covariates", h)


def test_a_larger_share_moves_noise_from_the_regression_to_y_star():
    """"auto" bounds the two channels together: at share 1 κ is larger and κ_β smaller than at
    0.25, and every record's bound (y*'s 1/κ² plus h_ii/κ_β²) stays within the target."""
    rng = np.random.default_rng(3)
    n = 200
    X = np.column_stack([np.ones(n), rng.exponential(size=n) ** 2])  # a few large leverages
    h = leverage(X)
    y = rng.normal(12.0, 0.5, n)
    loo = Predictive(mean=(y + rng.normal(0, 0.3, n))[None, :], sd=np.full((1, n), 0.3))
    _, at = attributable_function(loo, y, Measure.parse("rel:0.1"), "share", "exp")
    unlimited = np.full(n, np.inf)
    chosen = {}
    for share in (0.25, 1.0):
        def bound(k, share=share):
            return at(unlimited, noise_sd=k, ols=h / ols_noise_sd(k, h, share=share) ** 2)
        k = choose_kappa(bound, 0.10)
        assert bound(k).max() <= 0.10
        chosen[share] = (k, ols_noise_sd(k, h, share=share))
    assert chosen[1.0][0] > chosen[0.25][0]  # more noise on y*
    assert chosen[1.0][1] < chosen[0.25][1]  # less on the regression
    assert OLS_INFORMATION_SHARE == 1.0


@pytest.fixture(scope="module")
def noisy():
    with pytest.warns(UserWarning):
        return run_release(_spec())


def test_the_calibration_matches_the_noised_target_not_y(noisy):
    """Each implicate's means have the OLS of y + e_β (not of y, not of y*) on X."""
    ds = noisy.implicates["restricted"]
    attrs = ds.attrs["input_noise"]
    assert attrs["ols_sd"] > 0 and "separate" in attrs["calibration_target"]
    X, y = noisy.data.X, noisy.data.y
    b_means = np.linalg.lstsq(X, ds["y_mean"].values.T, rcond=None)[0]
    assert np.allclose(b_means, b_means[:, :1], atol=1e-8)  # one regression for every ℓ
    b_y = np.linalg.lstsq(X, y, rcond=None)[0]
    assert not np.allclose(b_means[:, 0], b_y, atol=1e-6)


def test_expected_centre_is_the_mechanism_without_its_noise(monkeypatch):
    """The own-value predictive over the noise is centred where the same mechanism puts the
    means when both noises are zero at the same θ (the map is linear: shift = A e + B e_β)."""
    from synthgeo.pipeline import run as run_mod
    real, kept = run_mod.make_fitter, {}

    def keeping(*args, **kwargs):  # the y* fit of the first run serves the second
        fit = real(*args, **kwargs)

        def call(*a, label=None, **kw):
            if label != "unrestricted (y*)":
                return fit(*a, label=label, **kw)
            if "star" not in kept:
                kept["star"] = fit(*a, label=label, **kw)
            return kept["star"]
        return call

    monkeypatch.setattr(run_mod, "make_fitter", keeping)
    with pytest.warns(UserWarning):
        noisy = run_release(_spec())
    ds = noisy.implicates["restricted"]
    assert {"y_mean_marginal", "y_sd_marginal"} <= set(ds.data_vars)
    assert (ds["y_sd_marginal"].values > ds["y_sd"].values).all()
    # over the noise each record keeps its leave-out spread, except where the noise's own
    # variance reaches it (then the implicates keep FLOOR of it)
    s = ds["y_sd_marginal"].values
    floored = ds["y_sd"].values <= np.sqrt(synthesis_noise.FLOOR) * s * (1 + 1e-9)
    assert floored.mean() < 0.5
    assert ds.attrs["input_noise"]["n_records_variance_floored"] == int(
        floored.any(axis=0).sum())
    assert ds.attrs["input_noise"]["fit"].startswith("y*")
    monkeypatch.setattr(synthesis_noise, "noisy_response", lambda y, kappa, seed: y.copy())
    with pytest.warns(UserWarning):
        quiet = run_release(_spec())
    centre = quiet.implicates["restricted"]["y_mean"].values
    np.testing.assert_allclose(ds["y_mean_marginal"].values, centre, atol=1e-8)


def test_own_values_reading_expected_is_judged_and_realised_is_beside_it(noisy):
    attrs = noisy.implicates["restricted"].attrs["input_noise"]
    assert attrs["own_values_reading"] == "expected"
    own = noisy.risk_scores.summary.record_attributable("restricted", "rel:0.1", "share")
    assert float(own.max()) == pytest.approx(attrs["own_values_largest_expected"], abs=0.02)
    with pytest.warns(UserWarning):
        realised = run_release(_spec().replace("risk", input_noise_reading="realised"))
    ds = realised.implicates["restricted"]
    assert "y_mean_marginal" not in ds
    own_r = realised.risk_scores.summary.record_attributable("restricted", "rel:0.1", "share")
    assert float(own_r.max()) == pytest.approx(
        ds.attrs["input_noise"]["own_values_largest_this_noise"], abs=0.02)


def test_release_attacker_counts_the_calibration_channel(noisy):
    """The any-L bound with the calibration's channel is above the one without it."""
    from synthgeo.config.measure import Measure
    from synthgeo.pipeline.release_attack import attributable_function
    attack = noisy.release_attack
    kappa = attack.kappa
    h = leverage(noisy.data.X)
    ols = noisy.implicates["restricted"].attrs["input_noise"]["ols_sd"]
    base, f = attributable_function(noisy.risk_scores.baseline, noisy.data.y,
                                    Measure.parse("rel:0.1"), "share", "exp", kappa=kappa)
    inf = np.full(h.size, np.inf)
    with_ols = f(inf, ols=h / ols ** 2)
    assert attack.largest_unlimited == pytest.approx(float(with_ols.max()))
    assert float(with_ols.max()) > float(f(inf).max())


def test_leave_out_variance_factor_is_the_production_leave_out_variance():
    """σ² [Q_BB⁻¹]_ii (block_inverse) is the production leave-out predictive's variance."""
    from scipy.spatial.distance import cdist

    from synthgeo.risk.loo import baseline_loo, exact_precision, loo_blocks
    from synthgeo.risk.release_attacker import block_inverse
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 3000, (30, 2))
    xy[1::6] = xy[0::6][: xy[1::6].shape[0]]  # shared sites: blocks of two
    site = np.unique(xy, axis=0, return_inverse=True)[1].ravel()
    blocks = loo_blocks(site)
    X = np.column_stack([np.ones(30), rng.standard_normal(30)])
    y = rng.standard_normal(30)
    phi, alpha, sigma2 = 1 / 700.0, 0.4, 0.2
    g = baseline_loo(y, X, beta=np.array([[0.0, 0.0]]), sigma2=np.array([sigma2]),
                     phi=np.array([phi]), alpha=np.array([alpha]),
                     precision_of=exact_precision(xy), blocks=blocks)
    Q = exact_precision(xy)(phi, alpha)
    factor = np.asarray(block_inverse(Q, blocks).diagonal()).ravel()
    np.testing.assert_allclose(sigma2 * factor, g.sd[0] ** 2, rtol=1e-10)
    assert cdist(xy, xy).max() > 0


def test_auto_takes_the_separate_target_only_where_it_helps():
    """The bundled sales (one leverage 0.24): "auto" calibrates to y*'s OLS; a design without
    a large leverage gets the separate target; never under the leave-own-out shift."""
    from synthgeo.synthesis.input_noise import separate_target
    said = []
    with pytest.warns(UserWarning):
        res = run_release(_spec(input_noise_ols="auto"), progress=said.append)
    attrs = res.implicates["restricted"].attrs["input_noise"]
    assert attrs["calibration_target"] == "OLS of y*" and attrs["ols_sd"] is None
    # the console says what the noise did, both readings (new-user finding, 2026-12-03)
    line = next(m for m in said if m.startswith("input noise: sd"))
    assert "over the noise" in line and "on this draw" in line
    assert separate_target("auto", "covariates", np.full(100, 0.01))
    assert not separate_target("auto", "covariates_loo", np.full(100, 0.01))
    assert not separate_target("separate", "none", np.full(100, 0.01))


def test_the_noise_and_its_normals_need_the_confidential_values_not_only_the_seed(monkeypatch):
    """Break-it trial 2026-12-07: a spec seed (the bundled 20181) was found from release/ in
    9 s by correlating implicate spreads with each candidate seed's normals, and with it e and
    the prices came back (96 % within 10 %). e and the released normals are keyed by the seed
    *and* the SHA-256 of y (synthgeo._seed.confidential_seed): the seed alone reproduces
    neither, the seed with y does (the same files from the same spec and data)."""
    from synthgeo._seed import confidential_words, keyed_seeds
    from synthgeo.synthesis.input_noise import INPUT_NOISE_KEY, noisy_response

    seen = {}
    real_noisy, real_draw = synthesis_noise.noisy_response, synthesis_noise.draw_cross_fitted

    def noisy_spy(y, sd, seed):
        seen.setdefault("noise", (np.array(y), sd, seed))
        return real_noisy(y, sd, seed)

    def draw_spy(*args, random_seed=None, **kwargs):
        seen.setdefault("normals", random_seed)
        return real_draw(*args, random_seed=random_seed, **kwargs)

    monkeypatch.setattr(synthesis_noise, "noisy_response", noisy_spy)
    monkeypatch.setattr(synthesis_noise, "draw_cross_fitted", draw_spy)
    spec = _spec()
    with pytest.warns(UserWarning):
        run_release(spec)
    y, sd, noise_seed = seen["noise"]
    words = confidential_words(y)
    for seed in (noise_seed, seen["normals"]):
        assert list(seed.entropy)[-8:] == words
    # what a seed search reproduces: the streams of the spec's seed alone
    stream = np.random.SeedSequence(spec.sampling.seed).spawn(4)[2]
    e_guess = noisy_response(y, sd, keyed_seeds(stream, [INPUT_NOISE_KEY])[0]) - y
    e_true = real_noisy(y, sd, noise_seed) - y
    assert abs(np.corrcoef(e_guess, e_true)[0, 1]) < 0.3
    assert not np.allclose(seen["normals"].generate_state(4), stream.generate_state(4))


def test_the_data_users_readme_says_the_values_were_noised(noisy):
    """New-user finding: the data users' README said nothing of input noise and claimed a
    calibration to the confidential data. It names the noise, its sd and the wider intervals."""
    from synthgeo.release.readme import data_user_readme

    text = data_user_readme(noisy)
    sd = noisy.implicates["restricted"].attrs["input_noise"]["sd"]
    assert "**Noise infusion**" in text and f"deviation\n  {sd:.3g} on the log scale" in text
    assert "calibrated to the noised\n  data's" in text and "confidential\n  data's" not in text
    assert "intervals are wider by design" in text
    plain = dataclasses.replace(noisy, implicates={
        m: ds.assign_attrs(input_noise=None) for m, ds in noisy.implicates.items()})
    assert "Noise infusion" not in data_user_readme(plain)


def test_the_report_prints_the_figure_on_this_noise_draw(noisy):
    """New-user finding: the report only said release.json had the realised-noise figure; a
    board reads it beside the verdict, with the count above the threshold."""
    from synthgeo.release.report._risk_sections import section_risk

    noise = noisy.implicates["restricted"].attrs["input_noise"]
    body = str(section_risk(noisy).body)
    assert "this\nrelease's noise draw" in body
    assert f"<strong>{noise['largest_attributable_this_noise']:.3f}</strong>" in body
    assert f"<strong>{noise['n_records_above_this_noise']}</strong> records above" in body


def test_the_key_figures_show_the_release_attacker(noisy):
    """New-user finding: the release attacker's figure was only further down the report."""
    from synthgeo.release.report._overview import key_figures

    kf = key_figures(noisy)
    row = kf[kf["item"].str.startswith("release attacker (knows the method")]
    s = noisy.risk_scores.release_attack.summary()
    assert len(row) == 1
    assert row["value"].iloc[0].startswith(f"largest attributable {s['largest_attributable']:.3f}")


def test_noise_keys_that_would_do_nothing_or_too_much_are_refused_early(monkeypatch):
    """Break-it findings: input_noise_draws = "y_star" with no noise passed and did nothing;
    an sd above the cap was refused only after the fits. Both are refused before any fit."""
    from synthgeo.pipeline import run as run_module

    with pytest.raises(SpecError, match=r'input_noise_draws = "y_star"`.*input_noise = 0'):
        load_spec(bundled_spec_path()).replace(
            "synthesis", predictive="cross_fit", input_noise_draws="y_star")

    def no_fit(*args, **kwargs):
        raise AssertionError("a model was fitted before the refusal")

    monkeypatch.setattr(run_module, "make_fitter", no_fit)
    with pytest.raises(SpecError, match=r"input_noise = 1000000.0` is more than 5 times"):
        run_release(_spec(kappa=1e6))
