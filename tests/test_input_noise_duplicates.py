"""Input noise: exact duplicate records share one noise draw (break-it review, 2026-12-07).

With independent draws an attacker who knows the method averages the m duplicates' y* and reads
y with variance κ²/m; one draw per distinct record keeps it at κ².
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import synthgeo as sg
from synthgeo.config import (
    AnonymityConfig,
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    SamplingConfig,
)
from synthgeo.pipeline.run import run_release
from synthgeo.synthesis.input_noise import duplicate_draws, noisy_response, share_duplicate_draws
from synthgeo.testing import fake_fitter, fake_spec


def test_duplicate_draws_groups_same_site_covariates_and_value():
    site = np.array([0, 0, 0, 1, 0])
    X = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 3.0], [1.0, 2.0], [1.0, 2.0]])
    y = np.array([5.0, 5.0, 5.0, 5.0, 5.5])
    # record 1 duplicates 0; 2 differs in a covariate, 3 in site, 4 in value
    assert duplicate_draws(site, X, y).tolist() == [0, 0, 2, 3, 4]
    first = duplicate_draws(site, X, y)
    ystar = share_duplicate_draws(noisy_response(y, 0.3, 7), y, first)
    assert ystar[0] == ystar[1]
    assert len(set((ystar - y)[[0, 2, 3, 4]].tolist())) == 4
    again = share_duplicate_draws(noisy_response(y, 0.3, 7), y, first)
    np.testing.assert_array_equal(ystar, again)  # deterministic under the seed
    with pytest.raises(ValueError, match="same number of rows"):
        duplicate_draws(site[:3], X, y)


def _points():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                             crs="EPSG:4326", id="id", query="beds == 2")
    pts = pts.reset_index(drop=True)
    copies = pts.iloc[[3, 3, 10]].copy()  # record 3 three times in all, record 10 twice
    copies["id"] = [f"dup{k}" for k in range(3)]
    return pd.concat([pts, copies], ignore_index=True).set_geometry("geometry", crs=pts.crs)


def test_duplicates_share_one_draw_and_are_counted():
    pts = _points()
    spec = ReleaseSpec(
        data=DataConfig(responses=[{"name": "log_price"}], covariates=["sqft_living"],
                        id="id", accept_repeated_records=True),  # 4 of 143 repeat one
        model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=11),
        anonymity=AnonymityConfig(on_location_failure="warn"))
    spec = fake_spec(spec, n_draws=150, n_implicates=4).replace(
        "synthesis", predictive="cross_fit", input_noise=0.2)
    base, seen = fake_fitter(n_draws=150), []

    def capturing(y, X, sites, **kw):  # the fit of y* sees y* itself
        if kw.get("label") == "unrestricted (y*)":
            seen.append((np.asarray(y, float).copy(), sites.site_index.copy()))
        return base(y, X, sites, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(spec, points=pts, fitter=capturing)
    ystar, _ = seen[0]
    ids = [str(i) for i in res.data.record_id]
    y = res.data.y
    e = ystar - y
    for original, dups in ((pts["id"][3], ["dup0", "dup1"]), (pts["id"][10], ["dup2"])):
        i = ids.index(str(original))
        for d in dups:
            j = ids.index(d)
            assert y[i] == y[j]
            assert e[j] == e[i]  # one draw between them
    # every distinct record its own draw (the bundled file holds a duplicate of its own)
    _, site = seen[0]
    rows = pd.DataFrame(res.data.X).assign(site=site, y=y)
    assert np.unique(e).size == len(rows.drop_duplicates())
    attrs = res.implicates["restricted"].attrs["input_noise"]
    assert attrs["n_records_sharing_a_draw"] == int(rows.duplicated(keep=False).sum())
    assert attrs["n_records_sharing_a_draw"] >= 5  # 3 + 2 added here


def test_the_report_and_release_json_say_how_many_share_a_draw(tmp_path):
    """The bundled sales hold one exact duplicate pair (ids 341/342) and one near pair (35/193:
    one site and size, log prices 0.028 apart, within 0.1 κ = 0.03): 4 records share a draw,
    and the report's noise paragraph and release.json say so."""
    import json

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.config.risk import RiskTarget
    from synthgeo.release.report._risk_sections import section_risk
    from synthgeo.release.writer import write_release
    from synthgeo.testing import fake_release_result

    spec = load_spec(bundled_spec_path())
    spec = (spec.replace("risk", targets=[RiskTarget(measure="rel:0.1",
                                                     max_attributable_record=0.5)],
                         on_risk_failure="warn")
            .replace("synthesis", predictive="cross_fit", cross_fit_calibration="covariates",
                     input_noise=0.3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fake_release_result(spec, n_draws=100, n_implicates=4)
        assert res.implicates["restricted"].attrs["input_noise"]["n_records_sharing_a_draw"] == 4
        body = section_risk(res).body
        assert "against its target. 4 records are exact or near duplicates of another" in body
        write_release(res, tmp_path / "out")
    record = json.loads((tmp_path / "out" / "release.json").read_text())
    assert record["synthesis"]["input_noise"]["n_records_sharing_a_draw"] == 4


def test_near_duplicates_share_a_draw_within_the_tolerance():
    """Break-it (inputs8): a sale keyed twice, its price a last digit apart, got two draws."""
    site = np.zeros(5, int)
    X = np.ones((5, 1))
    y = np.array([5.0, 5.00001, 5.05, 5.2, 5.0])
    assert duplicate_draws(site, X, y).tolist() == [0, 1, 2, 3, 0]  # exact only
    assert duplicate_draws(site, X, y, tolerance=0.04).tolist() == [0, 0, 2, 3, 0]
    # every member within the tolerance of its cluster's smallest value: no chaining
    chain = np.array([0.0, 0.03, 0.06, 0.09])
    assert duplicate_draws(np.zeros(4, int), np.ones((4, 1)), chain,
                           tolerance=0.04).tolist() == [0, 0, 2, 2]
    # another site or covariate never shares
    assert duplicate_draws(np.array([0, 1]), np.ones((2, 1)), np.array([1.0, 1.0]),
                           tolerance=1.0).tolist() == [0, 1]
    with pytest.raises(ValueError, match="`tolerance`"):
        duplicate_draws(site, X, y, tolerance=-1.0)


def _with_near_copy(record: int = 7):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                             crs="EPSG:4326", id="id", query="beds == 2")
    pts = pts.reset_index(drop=True)
    copy = pts.iloc[[record]].copy()
    copy["id"] = "near"
    copy["price_usd"] += 1  # the last digit
    copy["log_price"] = np.log(copy["price_usd"])
    return pts, pd.concat([pts, copy], ignore_index=True).set_geometry("geometry", crs=pts.crs)


@pytest.mark.parametrize("loo_unit", [None, "record"])
def test_a_near_duplicate_shares_its_draw_unless_records_are_left_out_alone(loo_unit):
    """Where both lie in one leave-out block (the site) the release reads only their sum, so a
    shared draw is safe; left out one by one (loo_unit = "record") each one's implicates read
    the other's y*, and a shared draw would give their difference: independent draws there."""
    original, pts = _with_near_copy()
    spec = ReleaseSpec(
        data=DataConfig(responses=[{"name": "log_price"}], covariates=["sqft_living"],
                        id="id"),
        model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=11),
        anonymity=AnonymityConfig(on_location_failure="warn"))
    spec = fake_spec(spec, n_draws=150, n_implicates=4).replace(
        "synthesis", predictive="cross_fit", input_noise=0.4)
    if loo_unit:
        spec = spec.replace("risk", loo_unit=loo_unit)
    base, seen = fake_fitter(n_draws=150), []

    def capturing(y, X, sites, **kw):
        if kw.get("label") == "unrestricted (y*)":
            seen.append(np.asarray(y, float).copy())
        return base(y, X, sites, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(spec, points=pts, fitter=capturing)
    ids = [str(i) for i in res.data.record_id]
    i, j = ids.index(str(original["id"][7])), ids.index("near")
    e = seen[0] - res.data.y
    assert res.data.y[j] - res.data.y[i] == pytest.approx(np.log1p(1 / original["price_usd"][7]))
    sharing = res.implicates["restricted"].attrs["input_noise"]["n_records_sharing_a_draw"]
    if loo_unit is None:
        # the pair, the file's exact pair (ids 341/342) and its near one (35/193: one site and
        # size, log prices 0.028 apart, within 0.1 κ = 0.04)
        assert e[j] == e[i] and sharing == 6
    else:
        assert e[j] != e[i] and sharing == 2


@pytest.mark.slow
def test_the_release_reads_a_same_site_pair_only_through_its_noise_sum(monkeypatch):
    """Why a shared draw is safe for near-duplicates: with both in one leave-out block (the
    site), swapping the two records' independent noise moves no released value (the release
    reads their y* through y*_i + y*_j), while swapping one of them with a record elsewhere
    does."""
    from synthgeo.pipeline import synthesis_noise

    original, pts = _with_near_copy()
    spec = ReleaseSpec(
        data=DataConfig(responses=[{"name": "log_price"}], covariates=["sqft_living"],
                        id="id"),
        model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=11),
        anonymity=AnonymityConfig(on_location_failure="warn"))
    spec = fake_spec(spec, n_draws=150, n_implicates=4).replace(
        "synthesis", predictive="cross_fit", input_noise=0.4)
    i, j = 7, len(pts) - 1  # the record and its near copy (appended last)

    def released(other: int | None):
        def independent(noisy, y, first):  # every record its own draw, then a swap
            e = share_duplicate_draws(noisy, y, np.arange(y.size)) - y
            if other is not None:
                e[[i, other]] = e[[other, i]]
            return y + e

        monkeypatch.setattr(synthesis_noise, "share_duplicate_draws", independent)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = run_release(spec, points=pts, fitter=fake_fitter(n_draws=150))
        return res.implicates["restricted"]["y_synthetic"].values

    base = released(None)
    assert np.abs(released(j) - base).max() < 1e-5  # within the pair: the sum is unchanged
    assert np.abs(released(50) - base).max() > 0.05  # with a record elsewhere: it moves
