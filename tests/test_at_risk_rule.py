"""``[model] at_risk = "risk" | "both"`` and the neighbour check in the pipeline (issue 11)."""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import geopandas as gpd
import numpy as np
import xarray as xr
import pandas as pd
import pytest

from synthgeo.config import (
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    RiskConfig,
    RiskTarget,
    SamplingConfig,
    SynthesisConfig,
)
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.pipeline import run_release
from synthgeo.pipeline.at_risk_rule import risk_rule, run_neighbour_check
from synthgeo.release.writer import release_record, write_release
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.records import score_records
from synthgeo.risk.selection import choose_at_risk
from synthgeo.testing import fake_fitter

UTM = "EPSG:32610"
OFFSET = np.array([620_000.0, 4_200_000.0])  # inside UTM zone 10N, on land (east of the Bay)


def _points() -> gpd.GeoDataFrame:
    """6 tight clusters of 10 sales, plus two sales at one address 1.5 km from cluster 0.

    The two (ids 60, 61) are each other's neighbour (distance 0), so the spatial rule never
    flags them; they are 0.4 log-dollars (≈ 50 %) above cluster 0. The release learns their
    site's effect from both; the leave-one-out baseline leaves the whole site out and predicts
    cluster 0's level; the public regression predicts the overall mean: high attributable risk.
    """
    rng = np.random.default_rng(3)
    centres = rng.uniform(0, 15_000, (6, 2))
    xy = np.repeat(centres, 10, axis=0) + rng.normal(0, 60, (60, 2))
    y = np.log(200_000) + np.repeat(rng.normal(0, 0.3, 6), 10) + rng.normal(0, 0.05, 60)
    xy = np.vstack([xy, np.repeat(xy[:10].mean(0, keepdims=True) + [1500.0, 0.0], 2, 0)])
    y = np.concatenate([y, np.full(2, y[:10].mean() + 0.4)])
    xy = xy + OFFSET
    df = pd.DataFrame({"id": np.arange(62), "log_price": y})
    return gpd.GeoDataFrame(df, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=UTM)


def _spec(rule: str, threshold: float = 0.1) -> ReleaseSpec:
    return ReleaseSpec(
        data=DataConfig(response="log_price", id="id", target_crs=UTM),
        model=ModelConfig(at_risk=rule),
        sampling=SamplingConfig(draws=100, seed=7, on_convergence_failure="warn"),
        synthesis=SynthesisConfig(n_implicates=20),
        risk=RiskConfig(targets=[RiskTarget(measure="rel:0.1", record_threshold=threshold)]),
    )


def _run(rule: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_release(_spec(rule), points=_points(), fitter=fake_fitter(n_draws=100))


def test_risk_rule_flags_a_high_risk_record_the_spatial_rule_misses():
    spatial = _run("spatial")
    pair = [60, 61]
    assert not spatial.at_risk.at_risk[pair].any()  # each is the other's neighbour
    assert spatial.neighbour_check.choice.rule == "spatial"
    by_risk = _run("risk")
    choice = by_risk.neighbour_check.choice
    assert choice.by_risk[pair].all() and not choice.spatial[pair].any()
    assert by_risk.at_risk.at_risk[pair].all()
    # the restricted model removed their (shared) site's effect, and nothing else was flagged
    site = by_risk.data.sites.site_index[60]
    assert by_risk.fits["restricted"].scale[site] == 0.0
    # the pair by its point estimate; a few others only because their upper Monte Carlo bound
    # a_i + z se_i crosses the threshold (L = 20: protection errs on the safe side)
    flagged = np.flatnonzero(choice.by_risk).tolist()
    assert set(pair) <= set(flagged) and len(flagged) <= 10  # 8 of 62 on these selection draws
    both = _run("both")
    assert both.at_risk.at_risk[pair].all()
    assert both.at_risk.n_at_risk == int((choice.by_risk | both.neighbour_check.choice.spatial)
                                         .sum())


def test_neighbour_check_summary_in_release_json_and_rows_in_confidential(tmp_path):
    result = _run("risk")
    rec = release_record(result, seconds=result.seconds)
    nc = rec["neighbour_check"]
    flagged = int(result.neighbour_check.choice.by_risk.sum())  # the pair and upper bounds
    assert (nc["rule"], nc["n_at_risk"], nc["n_by_risk"]) == ("risk", flagged, flagged)
    assert flagged >= 2
    assert set(nc["by_measure"]) == {"abs:10000", "rel:0.1"}
    agg = nc["by_measure"]["rel:0.1"]
    chk = result.neighbour_check.checks["rel:0.1"]
    assert agg["n_rose"] == chk.n_rose and agg["largest_rise"] == pytest.approx(
        chk.table["rise"].max())
    assert "Rao-Blackwellised attributable risk" in rec["at_risk"]["rule"]
    out = write_release(result, tmp_path / "out")
    rows = pd.read_csv(out / "confidential" / "neighbour_check.csv")
    assert list(rows.columns) == ["id", "measure", "at_risk", "risk_unrestricted",
                                  "risk_restricted", "rise", "rise_se", "beyond_noise",
                                  "distance_m"]
    assert len(rows) == sum(c.n_rose_any for c in result.neighbour_check.checks.values())
    assert rows["beyond_noise"].sum() == sum(c.n_rose for c in
                                             result.neighbour_check.checks.values())
    # L = 20: the same-model noise level is computed from two halves of 10 implicates
    assert agg["n_rose_same_model"] is not None and agg["n_rose_any_same_model"] > 0
    # release.json holds aggregates only: no per-record table, no record id list
    text = json.dumps(json.loads((out / "release.json").read_text())["neighbour_check"])
    assert "risk_unrestricted" not in text and "\"id\"" not in text
    assert not any("neighbour" in p.name for p in (out / "release").rglob("*"))
    # fresh draws for judgement: selected on draws disjoint from the implicates' (issue 24)
    sel = json.loads((out / "release.json").read_text())["at_risk_selection"]
    assert sel["rule"] == "risk" and sel["draws_disjoint"] is True
    assert sel["n_selection_draws"] == sel["n_judged_draws"] == 20
    (t,) = sel["targets"]
    assert t["selection_unrestricted"]["n_records"] == flagged
    assert t["selection_unrestricted"]["n_possible"] == flagged  # how they were selected
    assert t["status"] == ("PASS" if t["fresh_restricted"]["n_possible"] == 0 else "FAIL")
    assert t["regression_to_mean"] == pytest.approx(
        t["selection_unrestricted"]["mean"] - t["fresh_unrestricted"]["mean"])
    risk = result.risk_scores.summary
    np.testing.assert_allclose(  # the fresh figures are the risk stage's, on the release draws
        t["fresh_restricted"]["mean"],
        risk.record_attributable("restricted", "rel:0.1")[choice_mask(result)].mean())
    ds = result.implicates["unrestricted"]
    post = result.fits["unrestricted"].posterior
    judged = ds["source_chain"].values * post.sizes["draw"] + ds["source_draw"].values
    assert not np.intersect1d(judged, result.at_risk_selection.selection_draws).size
    from synthgeo.release.report import section_neighbours

    html = section_neighbours(result).body
    assert "table-fresh-draws" in html and "selection draws, unrestricted" in html


def choice_mask(result):
    """The records the risk rule selected (before the site rule)."""
    return result.neighbour_check.choice.by_risk


def test_too_few_posterior_draws_for_fresh_draws_is_a_spec_error():
    from synthgeo._errors import SpecError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(SpecError, match=r'at_risk = "risk".*at least 40 retained '
                                             r"posterior draws.*\[sampling\] draws"):
            run_release(_spec("risk"), points=_points(), fitter=fake_fitter(n_draws=15))
    assert _run("spatial").at_risk_selection is None


def test_neighbour_check_in_the_pipeline_flags_a_constructed_neighbour():
    # Hand-made predictives stand in for the two fits: at-risk record 0 at (0, 0); record 1,
    # 30 m east and 40 m north, has its risk rise when 0 is protected; record 2, 3 km away,
    # is unchanged; record 3 (2 km away) falls.
    xy = np.array([[0.0, 0.0], [30.0, 40.0], [3000.0, 0.0], [0.0, 2000.0]]) + OFFSET
    gdf = gpd.GeoDataFrame({"id": [10, 11, 12, 13]},
                           geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=UTM)
    y = np.zeros(4)
    spec = SimpleNamespace(data=SimpleNamespace(back_transform="identity"),
                           risk=SimpleNamespace(eps=[0.5], p=[0.1], targets=[],
                                                confidence=0.95))
    data = SimpleNamespace(gdf=gdf, y=y, record_id=np.array([10, 11, 12, 13]), id_column="id")
    # N(mean, 1): P(|Y| <= .5) = .3829 at mean 0, .3413 at mean .5, .2417 at mean 1
    means = {"unrestricted": [0.0, 1.0, 0.5, 0.0], "restricted": [1.0, 0.0, 0.5, 1.0]}

    implicates = {m: xr.Dataset({"y_mean": (("implicate", "record"), np.array([v])),
                                 "y_sd": (("implicate", "record"), np.ones((1, 4)))})
                  for m, v in means.items()}
    flags = np.array([True, False, False, False])
    at_risk = AtRiskResult(radius_m=100.0, k=2, n_neighbours=np.zeros(4, int), at_risk=flags,
                           site_at_risk=flags)
    checks = run_neighbour_check(spec, data, implicates, at_risk,
                                 choose_at_risk("spatial", flags))
    t = checks.checks["abs:0.5"].table
    assert t["record"].tolist() == [1]
    assert t["rise"].iloc[0] == pytest.approx(0.3829249 - 0.2417303, abs=1e-6)
    assert t["distance_m"].iloc[0] == pytest.approx(50.0)
    s = checks.summary()
    assert s["by_measure"]["abs:0.5"] == {  # L = 1: no se, every point rise counts
        "n_records": 4, "n_rose": 1, "n_rose_same_model": None,
        "z_rise": pytest.approx(2.2414, abs=1e-4), "n_rose_at_risk": 0, "n_rose_any": 1,
        "n_rose_any_same_model": None, "n_rose_any_above_min": 1,
        "largest_rise": pytest.approx(0.1411946, abs=1e-6),
        "mean_rise": pytest.approx(0.1411946, abs=1e-6),
        "median_distance_m": pytest.approx(50.0), "distance_m_of_largest": pytest.approx(50.0)}
    rows = checks.to_dataframe()
    assert rows.loc[rows["measure"] == "abs:0.5", "id"].tolist() == [11]


def test_risk_rule_by_hand_puts_the_whole_site_at_risk():
    # 4 records at 3 sites; record 2 (site 1, shared with record 3) has attributable risk
    # .9 - .1 = .8 > .5; the spatial rule flags record 0 only.
    y = np.zeros(4)
    point = lambda mu: Predictive(mean=np.array([mu]), sd=np.full((1, 4), 1e-9))  # noqa: E731
    m = Measure(kind="abs", tol=0.5)
    rr = score_records(y, synthetic=np.zeros((1, 4)),
                       release=Predictive(mean=np.zeros((1, 4)),
                                          sd=np.array([[9.0, 9.0, 0.3, 9.0]])),
                       baseline_loo=point([9.0, 9.0, 9.0, 9.0]),
                       baseline_public=point([9.0, 9.0, 9.0, 9.0]), measures=[m],
                       g="identity")
    spec = SimpleNamespace(model=SimpleNamespace(at_risk="risk"), risk=SimpleNamespace(
        targets=[RiskTarget(measure="abs:0.5", record_threshold=0.5)]))
    data = SimpleNamespace(sites=SimpleNamespace(site_index=np.array([0, 2, 1, 1])))
    spatial = AtRiskResult(radius_m=1.0, k=2, n_neighbours=np.array([0, 1, 1, 1]),
                           at_risk=np.array([True, False, False, False]),
                           site_at_risk=np.array([True, False, False]))
    choice, res = risk_rule(spec, data, spatial, rr)
    assert choice.by_risk.tolist() == [False, False, True, False]  # P(|N(0,.3²)| <= .5) = .90
    assert res.at_risk.tolist() == [False, False, True, True]  # record 3 shares site 1
    assert res.site_at_risk.tolist() == [False, True, False]
    spec.model.at_risk = "both"
    _, res = risk_rule(spec, data, spatial, rr)
    assert res.at_risk.tolist() == [True, False, True, True]
    with pytest.raises(ValueError, match="needs the unrestricted record risk"):
        risk_rule(spec, data, spatial, None)


@pytest.mark.parametrize("n", [2, 201, 203])
def test_restricted_side_by_blocks_of_records_is_the_whole_to_the_bit(n, monkeypatch):
    """The neighbour check's restricted side, a block of records at a time (a last block of
    one record folded into the one before), gives the doubles of the whole (L, n) array."""
    from synthgeo.pipeline import at_risk_rule as A
    from synthgeo.risk.noise import paired_se
    from synthgeo.risk.rao_blackwell import within_probability

    rng = np.random.default_rng(n)
    L, y = 23, rng.normal(11, 1, n)
    m = Measure.parse("rel:0.1")
    pu = within_probability(Predictive(mean=y + rng.normal(0, .2, (L, n)),
                                       sd=rng.uniform(0.01, .5, (L, n))), y, m, "exp")
    restricted = Predictive(mean=y + rng.normal(0, .3, (L, n)), sd=rng.uniform(0, .5, (L, n)))
    pr = within_probability(restricted, y, m, "exp")
    monkeypatch.setattr(A, "_RECORD_BLOCK", 100)
    mean_r, se = A._restricted_side(pu, restricted, y, m, "exp")
    assert mean_r.tobytes() == pr.mean(axis=0).tobytes()
    assert se.tobytes() == paired_se(pu, pr).tobytes()
