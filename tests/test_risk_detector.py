"""The detector of protected records (synthgeo.risk.detector; issue 25, item 4).

Unit tests of each feature on hand-made arrays, of the AUC and its DeLong variance against a
brute-force double loop, of the cross-fitting and the refusals; then the positive control
(γ = ∞ on 120 random sites of a simulated NNGP design, the grid sampler: AUC ≥ 0.9) and the
negative control (120 records labelled at random in the unrestricted release, label seed
2026: the interval covers 0.5).
"""

from __future__ import annotations

import warnings

import jsonschema
import numpy as np
import pytest

from synthgeo.risk.detector import (
    DETECTOR_SCHEMA,
    FEATURES,
    auc_mann_whitney,
    cross_fitted_scores,
    cross_validated_auc,
    delong_auc,
    detect_protected,
    detector_features,
    release_block,
)


def _line(n):
    """n records on a line, 10 m apart (x = 0, 10, 20, ...)."""
    return np.column_stack([np.arange(n) * 10.0, np.zeros(n)])


# --- features on hand-made arrays -------------------------------------------------------------

def test_sd_features_by_hand():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(12, 6)) * np.array([1, 2, 3, 4, 5, 6.0])
    f = detector_features(Y, rng.normal(size=(6, 1)), _line(6), k=2)
    log_s = np.log(Y.std(axis=0, ddof=1))
    np.testing.assert_allclose(f["log_sd"], log_s)
    # record 0's two nearest are 1 and 2; record 3's are 2 and 4
    assert f["log_sd_vs_neighbours"][0] == pytest.approx(log_s[0] - (log_s[1] + log_s[2]) / 2)
    assert f["log_sd_vs_neighbours"][3] == pytest.approx(log_s[3] - (log_s[2] + log_s[4]) / 2)


def test_isolation_and_co_located_neighbours():
    coords = _line(5)
    coords[4] = [1000.0, 0.0]  # far from everyone
    f = detector_features(np.random.default_rng(1).normal(size=(5, 5)), np.zeros((5, 0)),
                          coords, k=2)
    np.testing.assert_allclose(f["log_isolation"][[0, 2, 4]],
                               np.log1p([20.0, 10.0, 1000.0 - 20.0]))
    # six records at one point: each one's neighbours are the others (distance 0), not itself
    same = np.zeros((6, 2))
    Y = np.random.default_rng(2).normal(size=(8, 6))
    g = detector_features(Y, np.zeros((6, 0)), same, k=5)
    np.testing.assert_allclose(g["log_isolation"], 0.0)
    log_s = np.log(Y.std(axis=0, ddof=1))
    want = log_s - (log_s.sum() - log_s) / 5
    np.testing.assert_allclose(g["log_sd_vs_neighbours"], want)


def test_centring_features_by_hand():
    """Residuals of the implicate means on the covariate fit, and on the neighbour smooth."""
    rng = np.random.default_rng(3)
    n = 8
    X = rng.normal(size=(n, 1))
    Y = rng.normal(size=(20, n)) + 2.0 + 3.0 * X[:, 0]
    f = detector_features(Y, X, _line(n), k=2)
    m = Y.mean(axis=0)
    Xc = np.column_stack([np.ones(n), X])
    r = m - Xc @ np.linalg.lstsq(Xc, m, rcond=None)[0]
    delta = 0.01 * r.std()
    np.testing.assert_allclose(f["log_covariate_distance"], np.log(np.abs(r) + delta))
    # an intercept column given or not: the same fit (a zero column is no intercept)
    g = detector_features(Y, np.column_stack([np.ones(n), X, np.zeros(n)]), _line(n), k=2)
    for name in FEATURES:
        np.testing.assert_allclose(g[name], f[name], atol=1e-10)
    # record 5's two nearest are 4 and 6 (10 m each)
    want = np.log(abs(r[5]) + delta) - np.log(abs(r[5] - (r[4] + r[6]) / 2) + delta)
    assert f["centring_ratio"][5] == pytest.approx(want)


def test_plane_distance_finds_the_plane_the_treated_records_share():
    """60 of 100 means sit on x β; the rest are moved off it (and tilt the OLS fit)."""
    rng = np.random.default_rng(4)
    n = 100
    X = rng.normal(size=(n, 1))
    on = np.arange(n) < 60
    plane = 1.0 + 2.0 * X[:, 0]
    shift = np.where(on, 0.0, rng.normal(3.0, 1.0, n) * (1 + X[:, 0] ** 2))
    Y = plane + shift + rng.normal(0, 0.05, size=(25, n))
    f = detector_features(Y, X, rng.uniform(0, 1000, (n, 2)), k=4)
    # the modal plane is x β: every record on it is nearer than every record off it ...
    assert f["plane_distance"][on].max() < f["plane_distance"][~on].min()
    # ... which the OLS plane, tilted by the others, does not give
    cov = f["log_covariate_distance"]
    assert cov[on].max() > cov[~on].min()
    # on the plane: |m − x β| is the δ floor plus the mean's noise (0.05 / √25 = 0.01)
    plane_floor = np.exp(f["plane_distance"][on]).min()
    assert np.exp(f["plane_distance"][on]).max() < plane_floor + 0.05


def test_neighbour_correlation_by_hand():
    rng = np.random.default_rng(5)
    L, n = 400, 30
    A, B = rng.normal(size=(2, L, 1))  # two smooth patches: records 0-14 and 15-28
    Y = np.where(np.arange(n) < 15, A, B) + 0.01 * rng.normal(size=(L, n))
    Y[:, 29] = rng.normal(size=L)  # the last record co-varies with no one
    X = np.zeros((n, 0))
    f = detector_features(Y, X, _line(n), k=2)
    # brute force: per-implicate residual (intercept only), deviations, neighbour mean
    U = Y - Y.mean(axis=1, keepdims=True)
    D = U - U.mean(axis=0)
    nb = {0: [1, 2], 2: [1, 3], 29: [28, 27]}
    for i, js in nb.items():
        want = np.corrcoef(D[:, i], D[:, js].mean(axis=1))[0, 1]
        assert f["neighbour_correlation"][i] == pytest.approx(want)
    assert f["neighbour_correlation"][2] > 0.9
    assert abs(f["neighbour_correlation"][29]) < 0.2


def test_features_refuse_bad_input():
    Y = np.zeros((10, 5))
    with pytest.raises(ValueError, match="L >= 3"):
        detector_features(Y[:2], np.zeros((5, 1)), _line(5))
    with pytest.raises(ValueError, match="coords_m"):
        detector_features(Y, np.zeros((5, 1)), _line(4))
    with pytest.raises(ValueError, match="`k`"):
        detector_features(Y, np.zeros((5, 1)), _line(5), k=5)
    Y[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        detector_features(Y, np.zeros((5, 1)), _line(5))


# --- AUC and its variance against brute force ---------------------------------------------------

def _brute(scores, labels):
    """AUC and DeLong's variance by the explicit double loop over (positive, negative)."""
    pos, neg = scores[labels], scores[~labels]
    psi = np.array([[1.0 if p > q else 0.5 if p == q else 0.0 for q in neg] for p in pos])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    var = v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)
    return psi.mean(), var


def test_auc_and_delong_variance_match_brute_force_with_ties():
    rng = np.random.default_rng(6)
    scores = np.round(rng.normal(size=60), 1)  # many ties
    labels = rng.random(60) < 0.3
    scores[labels] += 0.4
    auc_b, var_b = _brute(scores, labels)
    assert auc_mann_whitney(scores, labels) == pytest.approx(auc_b)
    auc, se, (lo, hi) = delong_auc(scores, labels, level=0.9)
    assert auc == pytest.approx(auc_b)
    assert se ** 2 == pytest.approx(var_b)
    assert (lo, hi) == pytest.approx((auc_b - 1.6448536 * se, auc_b + 1.6448536 * se))


def test_fold_averaged_auc_by_hand():
    rng = np.random.default_rng(7)
    s, y = rng.normal(size=80), rng.random(80) < 0.4
    fold = np.arange(80) % 4
    auc, se, _ = cross_validated_auc(s, y, fold)
    parts = [_brute(s[fold == f], y[fold == f]) for f in range(4)]
    assert auc == pytest.approx(np.mean([p[0] for p in parts]))
    assert se == pytest.approx(np.sqrt(sum(p[1] for p in parts)) / 4)


def test_auc_refuses_one_class():
    with pytest.raises(ValueError, match="both classes"):
        auc_mann_whitney([1.0, 2.0], [True, True])
    with pytest.raises(ValueError, match=">= 2 of each class"):
        delong_auc([1.0, 2.0, 3.0], [True, False, False])


# --- cross-fitting, refusals, the result ------------------------------------------------------

def test_cross_fitting_is_seeded_stratified_and_out_of_fold():
    rng = np.random.default_rng(8)
    F = rng.normal(size=(60, 6))  # noise: an in-sample fit would look like signal
    y = np.arange(60) < 20
    s1, fold, coefs, _ = cross_fitted_scores(F, y, folds=4, seed=3)
    s2, fold2, _, _ = cross_fitted_scores(F, y, folds=4, seed=3)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(fold, fold2)
    assert [int(y[fold == f].sum()) for f in range(4)] == [5, 5, 5, 5]
    # out of fold: over 25 seeded noise data sets, the in-sample AUC is optimistic, the
    # cross-fitted one is centred on 0.5 (its spread over data sets ≈ 0.10 at this size)
    import statsmodels.api as sm
    ins, cvs = [], []
    for seed in range(25):
        F = np.random.default_rng(seed).normal(size=(60, 6))
        A = sm.add_constant((F - F.mean(0)) / F.std(0))
        ins.append(auc_mann_whitney(sm.Logit(y.astype(float), A).fit(disp=0).fittedvalues, y))
        s, fold, _, _ = cross_fitted_scores(F, y, folds=4, seed=seed)
        cvs.append(cross_validated_auc(s, y, fold)[0])
    assert np.mean(ins) > 0.65
    assert abs(np.mean(cvs) - 0.5) < 0.04


def _toy(n=300, n_prot=60, effect=0.3, seed=1):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(30, n))
    Y[:, :n_prot] *= effect
    return Y, rng.normal(size=(n, 1)), rng.uniform(0, 1e3, (n, 2))


def test_few_protected_records_are_reported_but_not_judged():
    Y, X, xy = _toy()
    res = detect_protected(Y, X, xy, np.arange(60), k=5, n_permutations=5)
    assert res.auc > 0.95 and not res.judged
    assert "too few protected records to judge" in res.note
    assert res.to_dict()["judged"] is False
    with pytest.raises(ValueError, match="nothing to detect"):
        detect_protected(Y, X, xy, np.zeros(300, bool), n_permutations=0)
    with pytest.raises(ValueError, match=">= 10 protected"):
        detect_protected(Y, X, xy, np.arange(9), n_permutations=0)
    with pytest.raises(ValueError, match="`features`"):
        detect_protected(Y, X, xy, np.arange(60), features=("height",), n_permutations=0)
    with pytest.raises(ValueError, match="boolean mask"):
        detect_protected(Y, X, xy, np.ones(5, bool), n_permutations=0)
    with pytest.raises(ValueError, match="0/1 integer mask"):
        detect_protected(Y, X, xy, (np.arange(300) < 60).astype(int), n_permutations=0)


def test_result_repr_and_release_block_hold_no_record_level_value():
    Y, X, xy = _toy(n=400, n_prot=120, effect=0.8)
    res = detect_protected(Y, X, xy, np.arange(120), k=5, seed=4, n_permutations=10)
    assert res.judged and res.note is None
    text = repr(res)
    assert text.startswith("DetectorResult(n_protected=120, n_other=280, auc=")
    assert "confidential contents not shown" in text
    block = res.to_dict()
    jsonschema.validate(block, DETECTOR_SCHEMA)
    assert release_block(res) == block
    jsonschema.validate(release_block(None, reason="no record at risk"), DETECTOR_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**block, "per_record": [0.1]}, DETECTOR_SCHEMA)
    with pytest.raises(ValueError, match="reason"):
        release_block(None)
    assert block["features"] == list(FEATURES) and block["seed"] == 4
    assert block["folds"] == 5 and block["n_permutations"] == 10
    assert block["se"] == max(block["se_delong"], block["null_sd"])
    # nothing per record: no list as long as the protected set, no array
    assert not any(isinstance(v, (list, np.ndarray)) and len(v) >= 120
                   for v in block.values())
    # seeded: the same figures again
    assert detect_protected(Y, X, xy, np.arange(120), k=5, seed=4,
                            n_permutations=10).to_dict() == block


# --- positive and negative control with the real model pieces ------------------------------------

@pytest.fixture(scope="module")
def controls():
    """A simulated NNGP design (1,000 records), fitted with the grid sampler twice: unrestricted
    and restricted (γ = ∞ at 120 random sites); L = 100 implicates of each."""
    from synthgeo.config import SamplingConfig
    from synthgeo.inference.grid import fit_gp_grid
    from synthgeo.inference.grid_posterior import GridSettings
    from synthgeo.model.kernels import make_sites
    from synthgeo.model.restricted_gp import default_priors
    from synthgeo.model.smoothing import Smoothing
    from synthgeo.synthesis.implicates import draw_implicates
    from synthgeo.testing import simulate_gp

    sim = simulate_gp(1000, sigma2=1.0, nugget=0.25, phi_per_m=3 / 500, extent_m=3000.0,
                      random_seed=7)
    sites = make_sites(sim["coords_m"])
    config = SamplingConfig(sampler="grid", chains=2, draws=50, seed=3,
                            on_convergence_failure="warn")
    priors = default_priors(sim["y"], sim["X"], sites)
    flag = np.zeros(sites.n_sites, bool)
    flag[np.random.default_rng(1).choice(sites.n_sites, 120, replace=False)] = True
    out = {"X": sim["X"][:, 1:], "coords": sim["coords_m"], "protected": flag[sites.site_index]}
    for name, scale in (("unrestricted", None), ("restricted", Smoothing(a=flag * 1.0,
                                                                         gamma=np.inf))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fit = fit_gp_grid(sim["y"], sim["X"], sites, priors=priors,
                              coef_names=["Intercept", "x1"], scale=scale, config=config,
                              gp="nngp", n_neighbors=10,
                              settings=GridSettings(n_coarse=6, n_fine=6, max_stages=2),
                              random_seed=5)
        out[name] = draw_implicates(fit, sim["X"], n_implicates=100,
                                    random_seed=4)["y_synthetic"].values
    return out


def test_positive_control_gamma_inf_is_caught(controls):
    res = detect_protected(controls["restricted"], controls["X"], controls["coords"],
                           controls["protected"], seed=2025, n_permutations=20)
    assert res.n_protected >= 100 and res.judged
    assert res.auc >= 0.9, res
    assert res.p_value == pytest.approx(1 / 21)  # beats every permutation


def test_negative_control_random_labels_cover_one_half(controls):
    n = controls["protected"].size
    labels = np.zeros(n, bool)
    labels[np.random.default_rng(2026).choice(n, int(controls["protected"].sum()),
                                              replace=False)] = True
    res = detect_protected(controls["unrestricted"], controls["X"], controls["coords"],
                           labels, seed=2025, n_permutations=20)
    assert res.ci[0] <= 0.5 <= res.ci[1], res
    # the same protected records in the *unprotected* release: nothing to see either
    same = detect_protected(controls["unrestricted"], controls["X"], controls["coords"],
                            controls["protected"], seed=2025, n_permutations=20)
    assert same.ci[0] <= 0.5 <= same.ci[1], same


@pytest.mark.slow
def test_positive_control_on_the_real_sacramento_file():
    """γ = ∞ at 120 random sites of models/sacramento_all.toml (932 real sales; the pipeline's
    restricted_smoothing and fitter, 100 grid draws per chain): the detector catches it."""
    from synthgeo.config import load_spec
    from synthgeo.io.crs import coordinates_m
    from synthgeo.model.at_risk import AtRiskResult
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.pipeline.run import make_fitter, restricted_smoothing
    from synthgeo.synthesis.implicates import draw_implicates

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    spec = load_spec(root / "models" / "sacramento_all.toml").replace(
        "sampling", draws=100).replace("model", gamma="inf", at_risk_weight="binary")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        data = prepare_data(spec)
        fit = make_fitter(spec, data)
        fu = fit(random_seed=1, label="unrestricted")
        flag = np.zeros(data.sites.n_sites, bool)
        flag[np.random.default_rng(2025).choice(data.sites.n_sites, 120, replace=False)] = True
        lab = flag[data.sites.site_index]
        coords = coordinates_m(data.gdf)
        at_risk = AtRiskResult(radius_m=0.0, k=2, n_neighbours=np.zeros(data.n_records, int),
                               at_risk=lab, site_at_risk=flag)
        sm = restricted_smoothing(spec, coords, data.sites, at_risk,
                                  float(fu.phi_quantiles((0.5,))[0]))
        fr = fit(scale=sm, random_seed=2, label="restricted")
    Y = draw_implicates(fr, data.X, n_implicates=100, random_seed=3)["y_synthetic"].values
    res = detect_protected(Y, data.X[:, 1:], coords, lab, seed=2025, n_permutations=20)
    assert res.n_protected >= 100 and res.auc >= 0.9, res


def test_negative_control_over_ten_labellings(controls):
    """Ten random labellings (seeds 3000-3009) of the unrestricted release: centred on 0.5."""
    n, n_prot = controls["protected"].size, int(controls["protected"].sum())
    aucs, covered = [], 0
    for i in range(10):
        labels = np.zeros(n, bool)
        labels[np.random.default_rng(3000 + i).choice(n, n_prot, replace=False)] = True
        res = detect_protected(controls["unrestricted"], controls["X"], controls["coords"],
                               labels, seed=2025, n_permutations=10)
        aucs.append(res.auc)
        covered += res.ci[0] <= 0.5 <= res.ci[1]
    assert abs(np.mean(aucs) - 0.5) < 0.03, aucs
    assert covered >= 8, aucs


def test_permutation_null_is_the_same_in_worker_processes_and_as_the_sequential_loop(
        monkeypatch):
    """The permutations are drawn first, in the loop's order: forked workers change nothing."""
    import synthgeo.risk.detector as det

    Y, X, xy = _toy(n=200, n_prot=40, effect=0.9, seed=4)
    monkeypatch.setattr(det, "PARALLEL_MIN_WORK", 0)  # workers even at this size
    one = detect_protected(Y, X, xy, np.arange(40), k=5, n_permutations=6, n_workers=1)
    two = detect_protected(Y, X, xy, np.arange(40), k=5, n_permutations=6, n_workers=2)
    assert (one.null_sd, one.p_value, one.auc) == (two.null_sd, two.p_value, two.auc)
    # the loop before the workers: permutation b, then its folds, from one generator
    feats = detector_features(Y, X, xy, k=5)
    F = np.column_stack([feats[name] for name in FEATURES])
    y = np.arange(200) < 40
    rng = np.random.default_rng([0, 1])
    null = []
    for _ in range(6):
        y_b = rng.permutation(y)
        s_b, f_b, _, _ = cross_fitted_scores(F, y_b, folds=5, seed=rng)
        null.append(cross_validated_auc(s_b, y_b, f_b)[0])
    assert one.null_sd == float(np.std(null, ddof=1))
