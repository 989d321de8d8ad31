"""Decisions on Monte Carlo estimates (issue 24 items 2 and 4): flags, verdict, neighbour rises."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import norm, t

from synthgeo.config import RiskConfig, RiskTarget
from synthgeo.risk.measure import Measure
from synthgeo.risk.neighbours import neighbour_check, same_model_rises
from synthgeo.risk.noise import (
    familywise_z,
    max_bounds,
    paired_se,
    rise_beyond_noise,
    threshold_counts,
    z_value,
)
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import within_probability
from synthgeo.risk.selection import choose_at_risk
from synthgeo.risk.verdict import assess_risk

L = 50


def _summary(a, se, n_implicates=L):
    """Return a stand-in AttributableSummary with given a_i and se_i for measure abs:1."""
    a, se = np.asarray(a, float), np.asarray(se, float)
    return SimpleNamespace(record_attributable=lambda model, key, attack="share": a,
                           record_attributable_se=lambda model, key, attack="share": se,
                           records={"restricted": SimpleNamespace(n_implicates=n_implicates)})


def test_quantiles_are_the_student_t_ones():
    assert z_value(0.95) == pytest.approx(norm.ppf(0.95))
    assert z_value(0.95, 50) == pytest.approx(t.ppf(0.95, 49))
    assert familywise_z(0.95, 1000, 50) == pytest.approx(t.ppf(1 - 0.05 / 1000, 49))
    with pytest.raises(ValueError, match="confidence"):
        z_value(1.0)
    with pytest.raises(Exception, match="confidence"):
        RiskConfig(confidence=1.5)
    assert RiskConfig().confidence == 0.95


def test_just_above_the_threshold_with_a_large_se_is_not_a_certain_breach():
    z = z_value(0.95, L)
    a = np.array([0.11, 0.40, 0.02])
    se = np.array([0.05, 0.01, 0.01])
    counts, certain, possible = threshold_counts(a, se, 0.10, 0.95, L)
    assert certain.tolist() == [False, True, False]      # .11 - z .05 < .10; .40 - z .01 > .10
    assert possible.tolist() == [True, True, False]      # .02 + z .01 < .10
    assert dict(counts) == {"n": 3, "n_point": 2, "n_certain": 1, "n_possible": 2}
    assert 0.11 - z * 0.05 < 0.10 < 0.40 - z * 0.01
    # the verdict: share above judged on the possible count (PASS only with the margin)
    target = RiskTarget(measure="abs:1", record_threshold=0.10, max_share_above=0.0)
    only_near = assess_risk(_summary([0.11, 0.02, 0.02], [0.05, 0.01, 0.01]), [target])
    c = only_near.checks[0]
    assert (c.n_above, c.n_certain, c.n_possible) == (1, 0, 1)
    assert c.value == pytest.approx(1 / 3) and c.lower == 0.0 and c.upper == pytest.approx(1 / 3)
    assert c.status == "FAIL"  # not a certain breach, but the target does not hold with margin
    # just below the threshold, small se: the point count and the verdict agree (PASS)
    below = assess_risk(_summary([0.09, 0.02, 0.02], [0.001, 0.01, 0.01]), [target])
    assert below.checks[0].status == "PASS" and below.checks[0].n_possible == 0
    # well above with a small se: a certain breach
    well = assess_risk(_summary([0.40, 0.02, 0.02], [0.01, 0.01, 0.01]), [target])
    assert well.checks[0].n_certain == 1 and well.checks[0].status == "FAIL"
    d = well.to_dict()["targets"][0]
    assert {"lower", "upper", "n_certain", "n_possible", "confidence"} <= set(d)


def test_the_largest_is_judged_with_a_simultaneous_bound():
    n = 1000
    zf = familywise_z(0.95, n, L)
    target = RiskTarget(measure="abs:1", max_attributable_record=0.10)
    # one record just above .10 with a large se, the rest at 0: not a certain breach, no PASS
    a, se = np.zeros(n), np.full(n, 0.001)
    a[0], se[0] = 0.11, 0.05
    b = max_bounds(a, se, 0.95, L)
    assert b["point"] == 0.11 and b["lower"] < 0.10 < b["upper"]
    assert b["upper"] == pytest.approx(0.11 + zf * 0.05)
    c = assess_risk(_summary(a, se), [target]).checks[0]
    assert c.status == "FAIL" and c.lower < 0.10 and c.value == pytest.approx(0.11)
    # a point max below the limit whose upper bound crosses it does not PASS either
    a[0] = 0.08
    assert assess_risk(_summary(a, se), [target]).checks[0].status == "FAIL"
    # well above with a small se: a certain breach (the lower bound exceeds the limit)
    a[0], se[0] = 0.40, 0.01
    c = assess_risk(_summary(a, se), [target]).checks[0]
    assert c.status == "FAIL" and c.lower > 0.10
    # well below with small se: PASS
    a[0], se[0] = 0.05, 0.002
    assert assess_risk(_summary(a, se), [target]).checks[0].status == "PASS"


def test_the_risk_rule_flags_on_the_upper_bound():
    a = np.array([[0.11, 0.40, 0.08, 0.02]])
    se = np.array([[0.05, 0.01, 0.02, 0.01]])
    z = z_value(0.95, L)
    c = choose_at_risk("risk", np.zeros(4, bool), attributable=a, record_threshold=0.10, se=se,
                       z=z)
    assert c.by_risk.tolist() == [True, True, True, False]  # .08 + 1.68 .02 > .10
    point = choose_at_risk("risk", np.zeros(4, bool), attributable=a, record_threshold=0.10)
    assert point.by_risk.tolist() == [True, True, False, False]


def _world(n=2000, seed=0):
    """Posterior draws of a per-record mean; truth y; predictive sd 0.2 per implicate."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 1.0, n)
    y = mu + rng.normal(0.0, 0.25, n)

    def draw(rng_):
        return Predictive(mean=mu + rng_.normal(0.0, 0.15, (L, n)), sd=np.full((L, n), 0.2))

    return y, draw


def test_an_independent_redraw_of_the_same_model_shows_no_rise_beyond_noise():
    y, draw = _world()
    m = Measure(kind="abs", tol=0.1)
    pu = within_probability(draw(np.random.default_rng(1)), y, m, "identity")
    pr = within_probability(draw(np.random.default_rng(2)), y, m, "identity")  # no CRN
    xy = np.column_stack([np.arange(y.size) * 100.0, np.zeros(y.size)])
    flags = np.zeros(y.size, bool)
    flags[0] = True
    chk = neighbour_check(xy, flags, pu.mean(0), pr.mean(0), rise_se=paired_se(pu, pr),
                          n_rows=L)
    assert chk.n_rose_any > 0.4 * y.size  # the raw count: about half the records "rose"
    assert chk.n_rose == 0
    same = same_model_rises(pu)
    assert same["n_rose"] == 0 and same["n_rose_any"] > 0.4 * y.size
    # positive control: record 5's restricted predictive centred on its true value
    mean = draw(np.random.default_rng(2)).mean
    mean[:, 5] = y[5]
    sd = np.full_like(mean, 0.2)
    sd[:, 5] = 0.05
    hot = Predictive(mean=mean, sd=sd)
    pr = within_probability(hot, y, m, "identity")
    chk = neighbour_check(xy, flags, pu.mean(0), pr.mean(0), rise_se=paired_se(pu, pr),
                          n_rows=L)
    assert chk.n_rose == 1
    assert chk.table.loc[chk.table["beyond_noise"], "record"].tolist() == [5]


def test_rise_se_is_paired_by_implicate():
    p = np.array([[0.1, 0.2], [0.3, 0.2], [0.5, 0.6]])
    np.testing.assert_allclose(paired_se(p, p + 0.05), 0.0, atol=1e-15)  # a sure shift
    np.testing.assert_allclose(paired_se(p, p[:2]), np.sqrt(p.var(0, ddof=1) / 3
                                                            + p[:2].var(0, ddof=1) / 2))
    beyond, _ = rise_beyond_noise(np.array([0.05, 0.05]), np.array([0.0, 0.05]))
    assert beyond.tolist() == [True, False]


def test_same_model_end_to_end_on_the_bundled_data_shows_no_rise_beyond_noise(tmp_path):
    """Run with gamma = 0: the restricted model is the unrestricted one (D = I).

    With common random numbers (one seed for both fits, one stream for both models'
    implicates, the unrestricted grid posterior reused when D = I) the two models' implicates
    are bit-identical and every difference is exactly 0; the same-model noise level (two
    halves of the unrestricted implicates) still shows its raw rises.
    """
    import json
    import warnings

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline import run_release
    from synthgeo.release.writer import write_release

    spec = load_spec(bundled_spec_path()).replace("model", gamma=0.0)
    spec = spec.replace("risk", targets=[RiskTarget(measure="rel:0.1", record_threshold=0.1,
                                                    max_share_above=1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = run_release(spec)
    u, r = (result.implicates[m] for m in ("unrestricted", "restricted"))
    for var in ("y_synthetic", "y_mean", "y_sd"):
        np.testing.assert_array_equal(u[var].values, r[var].values)
    for key, agg in result.neighbour_check.summary()["by_measure"].items():
        assert agg["n_rose"] == 0, key
        assert agg["n_rose_same_model"] == 0, key
        assert agg["n_rose_any"] == 0 and agg["largest_rise"] == 0.0, key  # exactly 0
        assert agg["n_rose_any_same_model"] > 10  # raw: the noise of independent halves
    check = result.risk_scores.verdict.checks[0]
    assert check.n_certain <= check.n_above <= check.n_possible
    line = result.risk_scores.verdict_line()
    assert "certainly" in line and "possibly" in line
    out = write_release(result, tmp_path / "out", report_html="<html></html>")
    rec = json.loads((out / "release.json").read_text())
    assert rec["neighbour_check"]["by_measure"]["rel:0.1"]["n_rose_same_model"] == 0
    assert rec["verdicts"]["risk"]["targets"][0]["n_possible"] == check.n_possible


def test_positive_control_a_real_rise_is_reported_with_common_random_numbers():
    """The shipped bundled spec (γ = ∞ at its at-risk sites): a real change, found beyond noise.

    With the two models on common random numbers the rise of a record's risk is the models'
    (the se of a paired difference is that of the change, not of two samplers), so the
    restricted model's real rises count while the same-model level stays 0.
    """
    import warnings

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline import run_release

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = run_release(load_spec(bundled_spec_path()))
    assert result.at_risk.n_at_risk > 0
    for key, agg in result.neighbour_check.summary()["by_measure"].items():
        assert agg["n_rose"] >= 1, key
        assert agg["n_rose_same_model"] == 0, key
        chk = result.neighbour_check.checks[key]
        rose = chk.table[chk.table["beyond_noise"]]
        assert chk.z > 3 and (rose["rise"] > chk.z * rose["rise_se"]).all()
