"""General utility: pMSE, its paired permutation null, SPECKS and the breakdowns.

docs/risk-and-utility.md, "General utility: pMSE".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from synthgeo.utility.pmse import (
    fit_logistic,
    grid_regions,
    pmse,
    pmse_by_variable,
    pmse_scores,
    propensity_formula,
)

# The hand-worked fixture. One binary variable x, four records; x is synthesized.
#   confidential x = 1, 1, 1, 0      synthetic x = 1, 0, 0, 0     (pair i = row i of each)
# Propensity model logit p = a + b x, fitted on the 8 stacked rows (label 1 = synthetic).
# It is saturated, so p̂ is the synthetic share in each cell:
#   x = 1: rows conf 1, 2, 3 and syn 1  -> 1 synthetic of 4 -> p̂ = 1/4
#   x = 0: rows conf 4 and syn 2, 3, 4  -> 3 synthetic of 4 -> p̂ = 3/4
# pMSE = (1/8) Σ (p̂ − 1/2)² = (1/8)(8 × 1/16) = 1/16.
# SPECKS: the confidential rows' p̂ are 1/4, 1/4, 1/4, 3/4 and the synthetic rows' 1/4, 3/4,
# 3/4, 3/4; the ECDFs differ most at 1/4: 3/4 − 1/4 = 1/2.
# Paired null: pairs 1 (1, 1) and 4 (0, 0) are the same whichever label they carry; pairs 2
# and 3 (1, 0) can swap. No swap or both swapped: the cells are 1/4 and 3/4 again (or 3/4 and
# 1/4) -> pMSE 1/16. One swapped: each cell holds 2 synthetic of 4 -> pMSE 0. The four
# patterns are equally likely: null mean 1/32, ratio (1/16)/(1/32) = 2, and with the
# permutation SD (ddof = 1 over many permutations → the population SD 1/32) S_pMSE = 1.
# The independent-sample formula (k − 1)(1 − c)² c / N = 1 × 1/4 × 1/2 / 8 = 1/64 would give
# a ratio of 4: it ignores the pairing.
HAND_CONF = pd.DataFrame({"x": [1.0, 1.0, 1.0, 0.0]})
HAND_SYN = np.array([[1.0, 0.0, 0.0, 0.0]])


def test_hand_worked_pmse_specks_and_paired_null():
    r = pmse_scores(HAND_CONF, HAND_SYN, synthesized=["x"], n_permutations=4000,
                    null_max_pairs=10, random_seed=7)
    row = r.by_implicate.iloc[0]
    assert row["pmse"] == pytest.approx(1 / 16, abs=1e-9)
    assert row["specks"] == pytest.approx(0.5, abs=1e-12)
    # null values are 0 or 1/16 with probability 1/2 each: mean 1/32, sd 1/32;
    # the Monte Carlo se of the mean over 4000 permutations is (1/32)/sqrt(4000) ≈ 5e-4
    assert row["null_mean"] == pytest.approx(1 / 32, abs=4 * (1 / 32) / np.sqrt(4000))
    assert row["null_sd"] == pytest.approx(1 / 32, rel=0.03)
    assert row["ratio"] == pytest.approx(2.0, rel=0.06)
    assert row["s_pmse"] == pytest.approx(1.0, abs=0.1)
    assert 1 / 64 < row["null_mean"]  # not the independent-sample expectation


def test_saturated_logistic_gives_the_cell_shares():
    X = np.column_stack([np.ones(8), np.r_[HAND_CONF["x"], HAND_SYN[0]]])
    p = fit_logistic(X, np.r_[np.zeros(4), np.ones(4)])
    np.testing.assert_allclose(p, [0.25, 0.25, 0.25, 0.75, 0.25, 0.75, 0.75, 0.75], atol=1e-9)
    assert pmse(p) == pytest.approx(1 / 16)


def test_logistic_fit_matches_statsmodels():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(500), rng.normal(size=(500, 4))])
    t = (rng.random(500) < 1 / (1 + np.exp(-(X @ [0.2, 1.0, -0.5, 0.0, 0.3])))).astype(float)
    ref = sm.Logit(t, X).fit(disp=0).predict()
    np.testing.assert_allclose(fit_logistic(X, t), ref, atol=1e-8)


def test_separation_gives_pmse_near_a_quarter():
    X = np.column_stack([np.ones(40), np.r_[np.zeros(20), np.ones(20)]])
    p = fit_logistic(X, np.r_[np.zeros(20), np.ones(20)])
    assert pmse(p) > 0.249


@pytest.mark.parametrize("case", ["spline-like", "separated", "rank-deficient", "large"])
def test_batched_null_fits_are_the_single_fits(case, monkeypatch):
    """The paired null's batched Newton fits agree with :func:`fit_logistic` fit by fit."""
    from synthgeo.utility import pmse as P

    rng = np.random.default_rng(11)
    n = 60
    X = np.column_stack([np.ones(2 * n), rng.normal(size=(2 * n, 5))])
    if case == "separated":  # one relabelling separates perfectly: p̂ -> 0/1, step-halving
        X[:, 1] = np.r_[np.zeros(n), np.ones(n)]
    if case == "rank-deficient":
        X[:, 2] = X[:, 3]
    if case == "large":  # the pair products too large to hold: the per-fit Hessian
        monkeypatch.setattr(P, "_BATCH_ELEMENTS", 10)
    swap = rng.random((7, n)) < 0.5
    if case == "separated":
        swap[0] = False
    T = np.hstack([swap, ~swap]).astype(float)
    batch = P._newton_batch(X, T, X32=X.astype(np.float32))
    single = np.array([fit_logistic(X, t) for t in T])
    np.testing.assert_allclose(batch, single, atol=1e-7)
    assert [pmse(p) for p in batch] == pytest.approx([pmse(p) for p in single], abs=1e-9)


def test_the_batched_and_the_one_by_one_null_give_the_same_figures(monkeypatch):
    """Small designs fit the null in batches, large ones one fit after another: both agree."""
    from synthgeo.utility import pmse as P

    rng = np.random.default_rng(5)
    conf = pd.DataFrame({"y": rng.normal(size=80), "x": rng.normal(size=80)})
    syn = conf["y"].to_numpy() + rng.normal(0, 0.5, size=(3, 80))
    kw = dict(synthesized=["y"], n_permutations=12, random_seed=4,
              regions=np.arange(80) % 3)
    batched = pmse_scores(conf, syn, **kw)
    monkeypatch.setattr(P, "_THREADED_ELEMENTS", 0)  # every design "large"
    one_by_one = pmse_scores(conf, syn, **kw)
    cols = ["pmse", "null_mean", "null_sd", "ratio", "s_pmse", "specks"]
    np.testing.assert_allclose(batched.by_implicate[cols], one_by_one.by_implicate[cols],
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(batched.by_region["null_mean"],
                               one_by_one.by_region["null_mean"], rtol=1e-6)


def _data(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 5000, size=(n, 2))
    x = rng.normal(size=n)
    conf = pd.DataFrame({"y": x + rng.normal(size=n), "x": x})
    syn = x + rng.normal(size=(3, n)) + shift
    return conf, syn, xy


def test_paired_null_is_calibrated_for_an_exchangeable_synthesis():
    # synthetic y drawn from the same model as the confidential y: each pair is exchangeable,
    # so the observed pMSE is a draw from the paired null and the ratio averages 1
    ratios = []
    for seed in range(30):
        conf, syn, _ = _data(300, seed)
        r = pmse_scores(conf, syn[:1], synthesized=["y"], n_permutations=10, random_seed=seed)
        ratios.append(r.by_implicate["ratio"].iloc[0])
    se = np.std(ratios, ddof=1) / np.sqrt(len(ratios))
    assert abs(np.mean(ratios) - 1.0) < 3 * se + 0.05


def test_a_shifted_synthesis_is_told_apart():
    conf, syn, xy = _data(400, 1, shift=0.5)
    r = pmse_scores(conf, syn, synthesized=["y"], n_permutations=10, random_seed=1)
    assert (r.by_implicate["ratio"] > 5).all()
    assert (r.by_implicate["s_pmse"] > 5).all()
    assert (r.by_implicate["specks"] > 0.15).all()
    assert r.pooled()["ratio"] == pytest.approx(r.by_implicate["ratio"].mean())


def test_null_on_a_subset_of_pairs_is_scaled_to_the_whole_file():
    # the null pMSE is a sum of per-row leverages over N: a random subset of m pairs, scaled
    # by m / n, estimates the whole file's null (Monte Carlo se here about 5 % each)
    conf, syn, xy = _data(1000, 4)
    full = pmse_scores(conf, syn, synthesized=["y"], n_permutations=200, random_seed=2)
    sub = pmse_scores(conf, syn, synthesized=["y"], n_permutations=200, null_max_pairs=250,
                      random_seed=2)
    assert sub.n_null_pairs == 250 and full.n_null_pairs == 1000
    assert sub.pooled()["null_mean"] == pytest.approx(full.pooled()["null_mean"], rel=0.2)
    np.testing.assert_allclose(sub.by_implicate["pmse"], full.by_implicate["pmse"])


def test_per_region_breakdown_finds_the_region_synthesized_badly():
    conf, syn, xy = _data(1500, 5)
    labels, cells = grid_regions(xy, n_cells=2, min_records=10)
    bad = labels == 3
    syn = syn.copy()
    syn[:, bad] += 1.5  # one quadrant's synthetic values are shifted
    r = pmse_scores(conf, syn, synthesized=["y"], coords_m=xy, coordinates="spline",
                    regions=labels, n_permutations=10, random_seed=3)
    t = r.by_region
    assert t["ratio"].idxmax() == 3
    # the additive smooth (a spline of each axis) spreads a quadrant's signal along its
    # row and column: the bad quadrant stands out, its neighbours are raised too
    assert t.loc[3, "ratio"] > 2 * t.drop(index=3)["ratio"].max()
    assert t["n_records"].sum() == len(conf)


def test_per_variable_breakdown_names_the_relation_that_is_lost():
    rng = np.random.default_rng(6)
    n = 800
    a, b = rng.normal(size=n), rng.normal(size=n)
    conf = pd.DataFrame({"y": a + b, "a": a, "b": b})
    syn = a + rng.normal(size=(2, n)) * np.sqrt(1.0)  # keeps y's relation to a, loses b's
    t = pmse_by_variable(conf, syn, synthesized=["y"], n_permutations=10,
                         random_seed=4).set_index("variable")
    assert t.loc["b", "ratio"] > 3 * t.loc["a", "ratio"]
    assert bool(t.loc["y", "synthesized"]) and not bool(t.loc["b", "synthesized"])


def test_same_result_whatever_the_threads():
    conf, syn, xy = _data(300, 8)
    one = pmse_scores(conf, syn, synthesized=["y"], coords_m=xy, coordinates="linear",
                      n_permutations=5, random_seed=9, n_threads=1)
    two = pmse_scores(conf, syn, synthesized=["y"], coords_m=xy, coordinates="linear",
                      n_permutations=5, random_seed=9, n_threads=2)
    pd.testing.assert_frame_equal(one.by_implicate, two.by_implicate)


@pytest.mark.parametrize("case", ["multilinear", "patsy"])
def test_blocks_of_rows_give_the_same_bits(case, monkeypatch):
    """An implicate's design and the Newton steps' float32 cast, a few rows at a time, give
    the figures of the whole at once to the bit (two synthesized variables, interactions)."""
    from synthgeo.utility import pmse as P

    conf, syn, xy = _data(150, 12)
    conf["z"] = conf["x"] ** 2
    rng = np.random.default_rng(3)
    frames = [{"y": s, "z": conf["z"].to_numpy() + rng.normal(size=150)} for s in syn]
    if case == "patsy":  # a text synthesized variable: patsy builds every implicate's design
        conf["z"] = np.where(conf["z"] > 1, "a", "b")
        frames = [{"y": f["y"], "z": np.where(f["z"] > 1, "a", "b")} for f in frames]
    kw = dict(synthesized=["y", "z"], coords_m=xy, coordinates="spline",
              terms="interactions", n_permutations=4, random_seed=6,
              regions=np.arange(150) % 4, n_threads=2)
    whole = pmse_scores(conf, frames, **kw)
    monkeypatch.setattr(P, "_BLOCK_ELEMENTS", 100)  # a few rows
    blocks = pmse_scores(conf, frames, **kw)
    pd.testing.assert_frame_equal(whole.by_implicate, blocks.by_implicate, check_exact=True)
    pd.testing.assert_frame_equal(whole.by_region, blocks.by_region, check_exact=True)


def test_implicate_design_columns_are_patsys():
    """The held columns and the constant ones make patsy's design of an implicate, also when
    a later corner changes columns an earlier one left as they were (z = 0 in the file)."""
    import patsy

    from synthgeo.utility import pmse as P

    conf, syn, xy = _data(120, 13)
    conf["z"] = 0.0
    conf = conf.assign(**{P._X: xy[:, 0], P._Y: xy[:, 1]})
    f = P.propensity_formula(["y", "x", "z"], ["y", "z"], terms="interactions",
                             coordinates="spline")
    info = patsy.dmatrix(f, conf).design_info
    X_conf = P._design(info, conf)
    d = P._ImplicateDesign(info, conf, ["y", "z"], X_conf)
    assert not d.patsy and 0 < d.cols.size < X_conf.shape[1]
    values = {"y": syn[0], "z": np.linspace(-1, 2, 120)}
    ref = P._design(info, conf.assign(**values))
    got = np.empty_like(ref)
    got[:, d.cols] = np.vstack([d.values(values, lo, min(lo + 50, 120))
                                for lo in range(0, 120, 50)])
    got[:, np.setdiff1d(np.arange(ref.shape[1]), d.cols)] = d.constant(X_conf, 0, 120)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * np.abs(ref).max())


def test_single_precision_rows_are_the_cast_product(monkeypatch):
    from synthgeo.utility import pmse as P

    rng = np.random.default_rng(8)
    X = rng.normal(size=(1000, 6)) * 10.0 ** rng.integers(-8, 8, size=(1000, 6))
    w = rng.random(1000).astype(np.float32)[:, None]
    monkeypatch.setattr(P, "_BLOCK_ELEMENTS", 1800)  # 300 rows
    got = P._scaled_rows32(X, w, out=np.empty(X.shape, np.float32))
    assert got.tobytes() == (X.astype(np.float32) * w).tobytes()


def test_multilinear_design_matches_patsy_with_interactions():
    conf, syn, xy = _data(200, 10)
    conf["group"] = np.where(conf["x"] > 0, "a", "b")  # text: treatment coded
    frames = [conf.assign(y=s) for s in syn]
    r = pmse_scores(conf, frames, synthesized=["y"], coords_m=xy, coordinates="spline",
                    terms="interactions", n_permutations=3, random_seed=1)
    # the same model through statsmodels on patsy's own design
    import patsy

    from synthgeo.utility import pmse as mod

    c = conf.assign(**{mod._X: xy[:, 0], mod._Y: xy[:, 1]})
    s0 = frames[0].assign(**{mod._X: xy[:, 0], mod._Y: xy[:, 1]})
    X = np.vstack([patsy.dmatrix(r.formula, c), patsy.build_design_matrices(
        [patsy.dmatrix(r.formula, c).design_info], s0)[0]])
    t = np.r_[np.zeros(200), np.ones(200)]
    ref = sm.GLM(t, X, family=sm.families.Binomial()).fit().predict()
    assert r.by_implicate["pmse"].iloc[0] == pytest.approx(pmse(ref), rel=1e-6)


def test_formula_terms():
    assert propensity_formula(["y", "x"], ["y"]) == "Q('y') + Q('x')"
    f = propensity_formula(["y", "x"], ["y"], coordinates="spline", spline_df=5)
    assert "bs(Q('__easting_m'), df=5)" in f and "Q('y'):(" in f


@pytest.mark.parametrize("kwargs, match", [
    ({"terms": "cubic"}, "`terms` must be one of"),
    ({"coordinates": "tensor"}, "`coordinates` must be one of"),
    ({"spline_df": 2}, "`spline_df` must be an integer ≥ 3"),
    ({"n_permutations": 1}, "`n_permutations` must be an integer ≥ 2"),
    ({"null_max_pairs": 5}, "`null_max_pairs` must be an integer ≥ 10"),
    ({"coordinates": "linear"}, "`coords_m` of shape"),
    ({"synthesized": ["z"]}, "`synthesized` must name columns"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    conf, syn, _ = _data(50, 0)
    args = {"synthesized": ["y"], **kwargs}
    with pytest.raises(ValueError, match=match):
        pmse_scores(conf, syn, **args)


def test_misaligned_implicate_is_refused_without_output():
    conf, syn, _ = _data(50, 0)
    with pytest.raises(ValueError, match="one value per confidential record"):
        pmse_scores(conf, syn[:, :40], synthesized=["y"])
    bad = syn.copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError, match="no missing value"):
        pmse_scores(conf, bad, synthesized=["y"])


def test_examples_run():
    """The Examples sections of synthgeo.utility.pmse run as written."""
    import doctest

    from synthgeo.utility import pmse as mod

    result = doctest.testmod(mod, extraglobs={"np": np, "pd": pd},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 5


def test_repr_shows_no_record_value():
    r = pmse_scores(HAND_CONF, HAND_SYN, synthesized=["x"], random_seed=1)
    assert "PMSEResult(n_implicates=1" in repr(r)


# --- the spec keys and the release stage ---------------------------------------------------

@pytest.mark.parametrize("key, value, match", [
    ("pmse_terms", "cubic", r'`\[utility\] pmse_terms` must be "main" or "interactions"'),
    ("pmse_coordinates", "tensor", r"`\[utility\] pmse_coordinates` must be \"none\""),
    ("pmse_spline_df", 2, r"`\[utility\] pmse_spline_df` must be an integer >= 3"),
    ("pmse_permutations", 1.5, r"`\[utility\] pmse_permutations` must be an integer >= 2"),
    ("pmse_null_max_pairs", True, r"`\[utility\] pmse_null_max_pairs` must be an integer"),
])
def test_spec_keys_refuse_bad_values(key, value, match):
    from synthgeo import SpecError
    from synthgeo.config import bundled_spec_path, load_spec

    spec = load_spec(bundled_spec_path())
    with pytest.raises(SpecError, match=match):
        spec.replace("utility", **{key: value})


def test_spec_keys_reach_the_stage():
    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline.general_utility import general_utility

    spec = load_spec(bundled_spec_path()).replace(
        "utility", pmse_terms="interactions", pmse_coordinates="linear",
        pmse_permutations=3, pmse_null_max_pairs=40)
    conf, syn, xy = _data(400, 11)  # ~11 records per cell of the 6 x 6 grid
    g = general_utility(spec, conf[["x"]], {"y": conf["y"].to_numpy()},
                        {"unrestricted": {"y": syn}, "restricted": {"y": syn[:2]}}, xy, seed=5)
    s = g.settings
    assert (s["terms"], s["coordinates"], s["n_permutations"], s["n_null_pairs"]) == (
        "interactions", "linear", 3, 40)
    assert "**2" in s["formula"] and "__easting_m" in s["formula"]
    pooled = g.pooled().set_index("model")
    assert pooled.loc["restricted", "n_implicates"] == 2
    assert set(g.by_region()["model"]) == {"unrestricted", "restricted"}
    assert (g.by_region()["n_records"] >= 10).all()
    again = general_utility(spec, conf[["x"]], {"y": conf["y"].to_numpy()},
                            {"unrestricted": {"y": syn}, "restricted": {"y": syn[:2]}}, xy,
                            seed=5)
    pd.testing.assert_frame_equal(g.by_implicate(), again.by_implicate())  # seeded


def test_release_json_carries_the_general_utility_block():
    import json

    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import release_record
    from synthgeo.testing import fake_release_result

    result = fake_release_result(n_implicates=4)
    rec = json.loads(json.dumps(release_record(result, seconds={"total": 1.0})))
    validate_release_record(rec)
    general = rec["utility"]["general"]
    assert {p["model"] for p in general["pooled"]} == {"unrestricted", "restricted"}
    assert len(general["by_implicate"]) == 8
    assert general["n_pairs"] == result.data.n_records
    assert all(r["n_records"] >= general["min_region_records"] for r in general["by_region"])
    assert {v["variable"] for v in general["by_variable"]} == {"log_price", "sqft_living",
                                                              "location"}
    assert "general_utility" in result.seconds
    from synthgeo.api import Release

    assert Release(result=result).general_utility is result.general_utility
    line = result.general_utility.summary_line()
    assert "restricted ratio" in line and "SPECKS" in line


@pytest.mark.slow
def test_several_responses_are_scored_jointly():
    """[[data.responses]]: one propensity model of every response; release.json's block."""
    import json
    import warnings

    import synthgeo as sg
    from synthgeo.config import (
        AnonymityConfig,
        DataConfig,
        ModelConfig,
        ReleaseSpec,
        SamplingConfig,
    )
    from synthgeo.pipeline import run_release
    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import sequential_record
    from synthgeo.testing import fake_fitter, fake_spec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                             crs="EPSG:4326", id="id", query="beds == 2")
        pts["lp2"] = pts["log_price"] + 0.01 * np.random.default_rng(5).normal(size=len(pts))
        spec = fake_spec(ReleaseSpec(
            data=DataConfig(responses=[{"name": "log_price"}, {"name": "lp2"}],
                            covariates=["sqft_living"], id="id"),
            model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=11),
            anonymity=AnonymityConfig(on_location_failure="warn")), n_draws=150,
            n_implicates=4)
        result = run_release(spec, points=pts, fitter=fake_fitter(n_draws=150))
    g = result.general_utility
    assert "Q('log_price')" in g.settings["formula"] and "Q('lp2')" in g.settings["formula"]
    variables = set(g.by_variable["restricted"]["variable"])
    assert {"log_price", "lp2", "sqft_living", "location"} <= variables
    rec = json.loads(json.dumps(sequential_record(result, seconds={"total": 1.0})))
    validate_release_record(rec)
    assert len(rec["general_utility"]["by_implicate"]) == 8
