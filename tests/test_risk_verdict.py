"""Risk targets, the verdict, the gate, the joint count, and their spec keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synthgeo._errors import RiskError, SpecError
from synthgeo.config import RiskConfig, RiskTarget, load_spec
from synthgeo.risk.attributable import attributable_summary
from synthgeo.risk.joint import joint_count, unique_on
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.records import score_records
from synthgeo.risk.verdict import RiskVerdict, apply_risk_gate, assess_risk


def _point(means) -> Predictive:
    means = np.atleast_2d(np.asarray(means, float))
    return Predictive(mean=means, sd=np.zeros_like(means))


@pytest.fixture(scope="module")
def summary():
    # 5 records, identity scale, abs:1. The release hits records 0-3 and misses 4; the LOO
    # baseline hits 0 and 1; the public baseline hits none. Per-record a = 0 0 1 1 0.
    y = np.zeros(5)
    release = _point([[0, 0, 0, 0, 9]])
    loo = _point([[0, 0, 9, 9, 9]])
    pub = _point([[9, 9, 9, 9, 9]])
    rr = score_records(y, synthetic=release.mean, release=release, baseline_loo=loo,
                       baseline_public=pub, measures=[Measure(kind="abs", tol=1.0)],
                       g="identity")
    return attributable_summary({"unrestricted": rr, "restricted": rr})


def test_verdict_per_target(summary):
    np.testing.assert_allclose(summary.record_attributable("restricted", "abs:1"),
                               [0, 0, 1, 1, 0])
    targets = [RiskTarget(measure="abs:1", max_attributable_record=1.0),
               RiskTarget(measure="abs:1", record_threshold=0.5, max_share_above=0.3)]
    v = assess_risk(summary, targets)
    assert v.status == "FAIL"
    first, second = v.checks
    assert (first.criterion, first.value, first.status) == ("max_attributable_record", 1.0,
                                                            "PASS")
    assert (second.criterion, second.value, second.n_above, second.status) == (
        "max_share_above", 0.4, 2, "FAIL")
    d = v.to_dict()
    assert d["status"] == "FAIL" and d["model"] == "restricted" and d["cumulative"] is False
    assert d["targets"][1]["limit"] == 0.3 and d["joint"] is None
    json.dumps(d, allow_nan=False)
    assert list(v.to_dataframe()["status"]) == ["PASS", "FAIL"]
    ok = assess_risk(summary, [RiskTarget(measure="abs:1", record_threshold=0.5,
                                          max_share_above=0.4)], cumulative=True)
    assert ok.status == "PASS" and ok.to_dict()["cumulative"] is True


def test_no_targets_is_not_assessed_never_pass(summary):
    v = assess_risk(summary, [])
    assert v.status == "NOT ASSESSED" and v.checks == ()
    assert v.to_dataframe().empty
    alone = assess_risk(summary, [RiskTarget(measure="abs:1", record_threshold=0.5)])
    assert alone.status == "NOT ASSESSED"
    assert alone.checks[0].criterion == "record_threshold" and alone.checks[0].n_above == 2
    with pytest.raises(ValueError, match="contradicts its checks"):
        RiskVerdict(status="PASS", model="restricted", checks=())


def test_average_attack_target(summary):
    # the average attack hits the same records: a = 0 0 1 1 0 as well
    v = assess_risk(summary, [RiskTarget(measure="abs:1", attack="average",
                                         max_attributable_record=0.0)])
    assert v.status == "FAIL" and v.checks[0].value == 1.0


def test_gate_stops_or_warns(summary):
    fail = assess_risk(summary, [RiskTarget(measure="abs:1", max_attributable_record=0.5)])
    with pytest.raises(RiskError, match=r"abs:1 share own values max_attributable_record: "
                                        r"upper bound 1 "
                                        r"\(at 0\.95; point 1\) > 0\.5\); "
                                        r"nothing was written to release/"):
        apply_risk_gate(fail, "stop")
    with pytest.warns(UserWarning, match="disclosure-risk targets failed"):
        apply_risk_gate(fail, "warn")
    apply_risk_gate(assess_risk(summary, []), "stop")  # NOT ASSESSED does not stop
    with pytest.raises(ValueError, match='must be "stop" or "warn"'):
        apply_risk_gate(fail, "ignore")


def test_joint_count():
    a = np.array([0.3, 0.3, 0.0, 0.2, 0.05])
    below_k = np.array([True, False, True, False, False])
    frame = pd.DataFrame({"x": [0, 1, 2, 3, 3], "y": [0, 0, 0, 0, 0], "sqft": [1, 1, 1, 7, 7]})
    unique = unique_on(frame, ["x", "y", "sqft"])
    assert unique.tolist() == [True, True, True, False, False]
    jc = joint_count(a, 0.1, below_k=below_k, unique=unique)
    # identifiable: 0, 1, 2; above 0.1: 0, 1, 3 -> joint: 0, 1
    assert jc.to_dict() == {"n_records": 5, "n_below_k": 2, "n_unique": 3, "n_identifiable": 3,
                            "n_above": 3, "n_joint": 2, "threshold": 0.1}
    assert jc.to_dataframe()["joint"].tolist() == [True, True, False, False, False]
    with pytest.raises(ValueError, match="`below_k` must be a bool array"):
        joint_count(a, 0.1, below_k=np.ones(5), unique=unique)
    with pytest.raises(KeyError, match="not in the frame"):
        unique_on(frame, ["price"])


# -- spec keys -------------------------------------------------------------------------------

BASE = '[data]\npath = "points.csv"\nresponse = "price"\n'


def _spec(tmp_path: Path, text: str):
    path = tmp_path / "spec.toml"
    path.write_text(BASE + text, encoding="utf-8")
    return load_spec(path)


def test_spec_transform_log(tmp_path):
    spec = _spec(tmp_path, 'transform = "log"\ncovariates = ["sqft"]\n')
    assert spec.data.transform == "log" and spec.data.back_transform == "exp"
    assert spec.formula == "log(price) ~ sqft"
    with pytest.raises(SpecError, match='transform = "log"` and `back_transform` are exclusive'):
        _spec(tmp_path, 'transform = "log"\nback_transform = "exp"\n')
    with pytest.raises(SpecError, match=r'`\[data\] transform` must be "log" \(or left out\)'):
        _spec(tmp_path, 'transform = "sqrt"\n')


def test_spec_targets_one_table_or_many(tmp_path):
    one = _spec(tmp_path, '[risk.targets]\nmeasure = "rel:0.1"\nmax_attributable_record = 0.1\n')
    assert one.risk.targets == [RiskTarget(measure="rel:0.1", max_attributable_record=0.1)]
    many = _spec(tmp_path, '[risk]\neps = [10000.0]\np = [0.1]\non_risk_failure = "warn"\n'
                 '[[risk.targets]]\nmeasure = "rel:0.1"\nrecord_threshold = 0.1\n'
                 'max_share_above = 0.01\n[[risk.targets]]\nmeasure = "abs:10000"\n'
                 'attack = "average"\nmax_attributable_record = 0.2\n')
    assert [t.measure for t in many.risk.targets] == ["rel:0.1", "abs:10000"]
    assert many.risk.on_risk_failure == "warn"
    d = many.to_dict()["risk"]["targets"]
    assert d[1] == {"measure": "abs:10000", "attack": "average", "max_attributable_record": 0.2,
                    "record_threshold": None, "max_share_above": None}
    assert many.replace("risk", on_risk_failure="stop").risk.targets == many.risk.targets


@pytest.mark.parametrize(("text", "match"), [
    ('[risk.targets]\nmeasure = "rel:0.2"\nmax_attributable_record = 0.1\n',
     r"must be one of the scored measures \['abs:10000', 'rel:0.1'\]"),
    ('[risk.targets]\nmeasure = "rel:0.1"\n', "sets no target"),
    ('[risk.targets]\nmeasure = "rel:0.1"\nmax_share_above = 0.1\n',
     "record_threshold` must be given with `max_share_above`"),
    ('[risk.targets]\nmeasure = "10%"\nmax_attributable_record = 0.1\n',
     r'`\[risk.targets\] measure` must be "rel:<fraction>" or "abs:<amount>"'),
    ('[risk.targets]\nmeasure = "rel:0.1"\nattack = "mean"\nmax_attributable_record = 0.1\n',
     r'attack` must be "share" or "average"'),
    ('[risk.targets]\nmeasure = "rel:0.1"\nmax_attributable_record = 2\n',
     r"max_attributable_record` must be a number in \[0, 1\]"),
    ('[risk.targets]\nmeasure = "rel:0.1"\nmax_attributable_record = -0.05\n',  # a typo'd 0.05
     r"max_attributable_record` must be a number in \[0, 1\]"),
    ('[risk.targets]\nmeasure = "rel:0.1"\nmax_attributable_record = 0.1\nsurprise = 1\n',
     r"unknown key\(s\) in `\[risk.targets\]`: \['surprise'\]"),
    ('[risk]\non_risk_failure = "ignore"\n', r'on_risk_failure` must be "stop" or "warn"'),
    ('[model]\nat_risk = "outliers"\n', r'at_risk` must be one of "spatial", "risk", "both"'),
    ('[model]\nat_risk = "risk"\n', r"needs a `\[risk.targets\] record_threshold`"),
])
def test_spec_risk_keys_refused(tmp_path, text, match):
    with pytest.raises(SpecError, match=match):
        _spec(tmp_path, text)


def test_spec_at_risk_by_risk(tmp_path):
    spec = _spec(tmp_path, '[model]\nat_risk = "both"\n[risk.targets]\nmeasure = "rel:0.1"\n'
                 'record_threshold = 0.1\n')
    assert spec.model.at_risk == "both" and spec.risk.targets[0].record_threshold == 0.1
    assert RiskConfig().targets == [] and RiskConfig().on_risk_failure == "stop"
