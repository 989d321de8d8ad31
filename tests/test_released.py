"""The released model named in one place (``synthgeo.pipeline.released``)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import xarray as xr

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline.protect import round_specs
from synthgeo.pipeline.released import released_label, released_label_of

TARGET = {"measure": "rel:0.1", "attack": "share", "max_attributable_record": 0.10}


def _rounds():
    spec = load_spec(bundled_spec_path()).replace("risk", protect="targets", targets=[TARGET])
    return [s for _, s in round_specs(spec)]


def test_every_round_of_protect_has_its_own_label():
    first, second, third, fourth = _rounds()
    assert released_label(first) == "restricted (differential smoothing, γ = ∞)"
    assert released_label(second) == "cross-fitted (calibrated, covariates_loo)"
    assert released_label(third, input_noise_sd=0.6213) == (
        "cross-fitted (calibrated, covariates), input noise κ = 0.62")
    protection = {"released_round": 4, "max_rounds": 4}
    label = released_label(fourth, input_noise_sd=0.6213, protection=protection)
    assert label == ("cross-fitted (calibrated, covariates), input noise κ = 0.62, implicates "
                     'of y*; round 4 of at most 4 (protect = "targets")')
    assert "restricted" not in label
    # before the noise is drawn the spec's "auto" is said as it is
    assert released_label(fourth).endswith("input noise κ = auto, implicates of y*")


def test_other_mechanisms_and_several_responses():
    posterior = NS(synthesis=NS(predictive="posterior"),
                   model=NS(gamma=0.5, at_risk_weight="continuous"))
    assert released_label(posterior) == "restricted (differential smoothing, γ = 0.5)"
    pseudo = NS(synthesis=NS(predictive="posterior"),
                model=NS(gamma="inf", at_risk_weight="pseudo_likelihood"))
    assert released_label(pseudo) == "restricted (risk-weighted pseudo-likelihood)"
    raw = NS(synthesis=NS(predictive="cross_fit", cross_fit_calibration="none", mean_noise=0.1,
                          input_noise=0.0), model=NS(gamma="inf"))
    assert released_label(raw) == "cross-fitted (raw, no calibration), mean noise sd 0.1"
    noisy = NS(synthesis=NS(predictive="cross_fit", cross_fit_calibration="covariates",
                            mean_noise=0.0, input_noise="auto", input_noise_draws="y"),
               model=NS(gamma="inf"))
    assert released_label(noisy, input_noise_sd={"log_price": 0.31, "avalue": 0.4}) == (
        "cross-fitted (calibrated, covariates), input noise κ = log_price 0.31, avalue 0.4")


def test_label_of_a_result_reads_the_noise_drawn_and_the_round():
    fourth = _rounds()[3]
    implicates = xr.Dataset(attrs={"input_noise": {"sd": 0.618}})
    result = NS(spec=fourth, implicates={"restricted": implicates},
                protection={"released_round": 4, "max_rounds": 4})
    assert released_label_of(result).startswith(
        "cross-fitted (calibrated, covariates), input noise κ = 0.62, implicates of y*; round 4")
    several = NS(spec=fourth, protection=None, responses=[
        NS(name="a", input_noise={"sd": 0.2}), NS(name="b", input_noise={"sd": 0.3})])
    assert "κ = a 0.2, b 0.3" in released_label_of(several)


def test_release_json_requires_the_label():
    from synthgeo.release.schema import release_schema

    schema = release_schema()
    assert "released_label" in schema["required"]
    assert schema["properties"]["released_label"]["type"] == "string"


@pytest.mark.parametrize("bad", [None, ""])
def test_a_record_without_a_label_is_refused(bad):
    import jsonschema

    from synthgeo.release.schema import release_schema

    prop = release_schema()["properties"]["released_label"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, prop)
