"""covariates_loo where a record's leverage is above one half (break-it review, 2026-12-07).

The leave-own-out shift divides by 1 - h_ii: above h_ii = 0.5 the leave-one-out covariate
prediction is unstable. A spec that asks for it is refused before the fit, naming the count and
"covariates"; protect = "targets" uses "covariates" in that round and says so in its name.
"""

import warnings

import numpy as np
import pytest

import synthgeo as sg
from synthgeo import SpecError
from synthgeo.config import (
    AnonymityConfig,
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    SamplingConfig,
)
from synthgeo.config.risk import RiskTarget
from synthgeo.pipeline import protect
from synthgeo.pipeline.run import run_release
from synthgeo.synthesis.cross_fit import high_leverage_count
from synthgeo.testing import fake_spec

TARGET = RiskTarget(measure="rel:0.1", max_attributable_record=0.10)


def _never_called(*args, **kwargs):
    raise AssertionError("fitted although the run should have been refused")


def _points(outlier: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                             crs="EPSG:4326", id="id", query="beds == 2")
    pts = pts.reset_index(drop=True)
    if outlier:  # one home 1000 times the others' size: h_ii close to 1
        pts.loc[0, "sqft_living"] = pts["sqft_living"].max() * 1000.0
    return pts


def _spec(**risk):
    spec = ReleaseSpec(
        data=DataConfig(response="log_price", covariates=["sqft_living"], id="id",
                        back_transform="exp"),
        model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=5),
        anonymity=AnonymityConfig(on_location_failure="warn"))
    spec = fake_spec(spec, n_draws=100, n_implicates=4)
    return spec.replace("risk", **risk) if risk else spec


def test_covariates_loo_with_a_high_leverage_record_is_refused_before_the_fit():
    spec = _spec().replace("synthesis", predictive="cross_fit",
                           cross_fit_calibration="covariates_loo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SpecError, match=r'covariates_loo"`: 1 record\(s\) have leverage h_ii '
                                            r'above 0.5.*use cross_fit_calibration = "covariates"'):
            run_release(spec, points=_points(True), fitter=_never_called)
        # without the outlier the check passes and the run reaches the fit
        with pytest.raises(AssertionError, match="fitted although"):
            run_release(spec, points=_points(False), fitter=_never_called)


def test_protect_falls_back_to_covariates_and_says_so(monkeypatch):
    spec = _spec(protect="targets", targets=[TARGET])
    names = [name for name, _ in protect.round_specs(spec)]
    assert names[1] == "cross_fit calibrated (covariates_loo)"
    rounds = protect.round_specs(spec, high_leverage=3)
    name, s = rounds[1]
    assert s.synthesis.cross_fit_calibration == "covariates"
    assert name == ("cross_fit calibrated (covariates; covariates_loo falls back: 3 record(s) "
                    "with leverage above 0.5)")
    assert [n for n, _ in rounds][2:] == names[2:]  # the later rounds unchanged
    # the run counts the records and hands the count to the rounds
    seen = {}

    def fake_seek(spec, run, *, high_leverage=0, **kwargs):
        seen["high_leverage"] = high_leverage
        return "sought"

    monkeypatch.setattr(protect, "seek_targets", fake_seek)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = _points(True)
        assert run_release(spec, points=pts, fitter=_never_called) == "sought"
    X = np.column_stack([np.ones(len(pts)), pts["sqft_living"].to_numpy(float)])
    assert seen["high_leverage"] == 1 == high_leverage_count(X)
