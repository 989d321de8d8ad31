"""Posterior mass piled at a data-derived prior bound: a coded warning (break-it 2026-12-07).

A true range far below the prior minimum (the median distance from a location to its nearest
other) put the range's posterior against that minimum, its interval excluding the truth, and
68-75 % of the records at risk, with no grid problem reported.
"""

from __future__ import annotations

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from synthgeo.config import (
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    SamplingConfig,
    SynthesisConfig,
    bundled_spec_path,
    load_spec,
)
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.inference.prior_bound import BOUND_MASS
from synthgeo.model.kernels import exponential_correlation, make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.pipeline import prepare_data

UTM = "EPSG:32610"
OFFSET = np.array([620_000.0, 4_200_000.0])  # inside UTM zone 10N, on land (east of the Bay)


def _design(range_m: float, seed: int = 3):
    """260 locations on a 3 km square and 50 of them with a neighbour 1 m away (310 records).

    The median distance to the nearest other location (the prior minimum of the range) is
    about 66 m; the close pairs show a range of 20 m to the likelihood.
    """
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 3000.0, (260, 2))
    pick = rng.choice(260, 50, replace=False)
    angle = rng.uniform(0, 2 * np.pi, 50)
    xy = np.vstack([base, base[pick] + np.column_stack([np.cos(angle), np.sin(angle)])])
    n = len(xy)
    cov = 4.0 * exponential_correlation(cdist(xy, xy), 3.0 / range_m) + 1e-10 * np.eye(n)
    w = np.linalg.cholesky(cov) @ rng.standard_normal(n)
    x1 = rng.standard_normal(n)
    y = 12.0 + 0.5 * x1 + w + rng.normal(0, 0.25, n)
    return xy, np.column_stack([np.ones(n), x1]), y


def _fit(range_m: float):
    xy, X, y = _design(range_m)
    sites = make_sites(xy)
    priors = default_priors(y, X, sites)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fit = fit_gp_grid(y, X, sites, priors=priors, coef_names=["b0", "b1"],
                          config=SamplingConfig(draws=100, seed=1), gp="exact",
                          label="unrestricted")
    return fit, priors, [str(w.message) for w in seen]


def test_a_true_range_below_the_prior_minimum_is_flagged():
    fit, priors, said = _fit(20.0)
    assert 20.0 < priors.range_min_m / 3  # the truth lies far below the prior's minimum
    lo = float(np.exp(fit.grid.quadrature.quantile("log_range_m", 0.025)))
    assert lo < 1.05 * priors.range_min_m  # the interval starts at the bound
    flags = fit.engine["posterior_at_prior_bound"]
    assert [(f["parameter"], f["bound"]) for f in flags] == [("range", "lower")]
    assert flags[0]["mass"] > BOUND_MASS and flags[0]["value"] == pytest.approx(
        priors.range_min_m)
    assert flags[0]["message"].startswith("unrestricted fit: ")
    assert "prior minimum" in flags[0]["message"] and "range_min_m" in flags[0]["message"]
    assert flags[0]["message"] in said  # a line on the console
    assert not fit.grid.quadrature.problems  # the grid's own checks see nothing


def test_a_range_inside_the_prior_box_is_not_flagged():
    fit, priors, said = _fit(400.0)
    assert "posterior_at_prior_bound" not in fit.engine
    assert not any("prior minimum" in s for s in said)
    spec = load_spec(bundled_spec_path())  # the bundled job's unrestricted fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = prepare_data(spec)
        bundled = fit_gp_grid(data.y, data.X, data.sites, priors=default_priors(
            data.y, data.X, data.sites), coef_names=data.coef_names,
            config=SamplingConfig(draws=100, seed=1), gp="exact")
    assert "posterior_at_prior_bound" not in bundled.engine


def _points(range_m: float) -> gpd.GeoDataFrame:
    xy, X, y = _design(range_m)
    xy = xy + OFFSET
    frame = pd.DataFrame({"id": np.arange(len(y)), "x1": X[:, 1], "log_price": y})
    return gpd.GeoDataFrame(frame, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=UTM)


@pytest.mark.slow
def test_the_warning_reaches_release_json_and_the_report():
    from synthgeo.pipeline import run_release
    from synthgeo.release.report import render_report
    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import release_record

    spec = ReleaseSpec(
        data=DataConfig(response="log_price", id="id", covariates=["x1"], target_crs=UTM,
                        back_transform="exp"),
        model=ModelConfig(gp="exact"),
        sampling=SamplingConfig(draws=100, seed=7, on_convergence_failure="warn"),
        synthesis=SynthesisConfig(n_implicates=5),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_release(spec, points=_points(20.0))
    rec = release_record(result, seconds=result.seconds)
    found = [w for w in rec["warnings"] if w["code"] == "posterior_at_prior_bound"]
    assert found and found[0]["message"].startswith("unrestricted fit: ")
    assert rec["fits"]["unrestricted"]["engine"]["posterior_at_prior_bound"][0]["bound"] == \
        "lower"
    # the record is written, not refused by the schema at the end of the run (break-it trial:
    # the engine key was missing from release.schema.json and every such run wrote nothing)
    validate_release_record(rec)
    page = render_report(result)
    assert "posterior at a prior bound, unrestricted" in page
