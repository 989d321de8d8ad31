"""The GPBoost comparison's parameter conversion (benchmarks/bench_gpboost.py), on tiny cases.

The benchmark itself is not a test (it needs GPBoost, outside synthgeo's dependencies, and
minutes); only its conversion helpers are tested here, against synthgeo's own kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from synthgeo.model.kernels import exponential_correlation


@pytest.fixture(scope="module")
def bench(benchmark_module):
    return benchmark_module("bench_gpboost")


def _gpboost_cov(cov_pars, xy):
    """GPBoost's exponential covariance, written from its documentation: σ² exp(−d/ρ) + τ² I."""
    nugget, sigma2, rho = cov_pars
    return sigma2 * np.exp(-cdist(xy, xy) / rho) + nugget * np.eye(len(xy))


@pytest.mark.parametrize("unit", [1.0, 1000.0])
def test_gpboost_covariance_is_synthgeos_after_conversion(bench, unit):
    xy = np.random.default_rng(0).uniform(0, 4000.0 / unit, (6, 2))  # 4 km square
    cov_pars = [0.3, 2.5, 700.0 / unit]  # ρ = 700 m in the coordinates' unit
    p = bench.gpboost_to_synthgeo(cov_pars, unit)
    assert p["range"] == pytest.approx(2100.0) and p["phi"] == pytest.approx(1 / 700.0)
    assert p["nugget_share"] == pytest.approx(0.3 / 2.8)
    ours = (p["sigma2"] * exponential_correlation(cdist(xy, xy) * unit, p["phi"])
            + p["nugget"] * np.eye(6))
    np.testing.assert_allclose(ours, _gpboost_cov(cov_pars, xy), rtol=1e-12)
    # synthgeo's effective range is where the correlation falls to e⁻³
    assert exponential_correlation(p["range"], p["phi"]) == pytest.approx(np.exp(-3.0))


def test_conversion_round_trip(bench):
    cov_pars = bench.synthgeo_to_gpboost(4.0, 0.0625, 2000.0, 1000.0)
    np.testing.assert_allclose(cov_pars, [0.0625, 4.0, 2.0 / 3.0])
    back = bench.gpboost_to_synthgeo(cov_pars, 1000.0)
    assert (back["sigma2"], back["nugget"]) == (4.0, 0.0625)
    assert back["range"] == pytest.approx(2000.0) and back["phi"] == pytest.approx(1.5e-3)


@pytest.mark.parametrize("cov_pars, unit, name", [
    ([0.1, 1.0], 1000.0, "cov_pars"), ([0.1, -1.0, 2.0], 1000.0, "cov_pars"),
    ([0.1, 1.0, np.nan], 1000.0, "cov_pars"), ([0.1, 1.0, 2.0], 0.0, "coord_unit_m")])
def test_bad_cov_pars_are_refused(bench, cov_pars, unit, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        bench.gpboost_to_synthgeo(cov_pars, unit)


def test_bad_synthgeo_parameters_are_refused(bench):
    with pytest.raises(ValueError, match="`range_m`"):
        bench.synthgeo_to_gpboost(4.0, 0.0625, -1.0, 1000.0)
