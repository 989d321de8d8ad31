"""The detector of protected records in the release (issue 25, item 3): where it runs, where it
does not and why, release.json's block and the report's section."""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace as NS

import numpy as np
import pytest

import synthgeo as sg
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.config.risk import RiskTarget
from synthgeo.pipeline.detector_stage import NOT_SELECTED, detector_block


def _spec(predictive="posterior", gamma="inf"):
    return NS(synthesis=NS(predictive=predictive),
              model=NS(gamma_value=0.0 if gamma == 0 else float("inf")))


def test_not_run_where_nobody_is_selected():
    """Cross-fit: every record treated, nothing to detect (the reason is said); γ = 0 treats
    nobody; too few protected records for the cross-fitted classifier: no AUC, and why."""
    block = detector_block(_spec("cross_fit"), None, {}, np.ones(50, bool))
    assert block == {"applicable": False, "reason": NOT_SELECTED}
    assert "nobody is selected" in block["reason"]
    assert "gamma = 0" in detector_block(_spec(gamma=0), None, {}, np.ones(50, bool))["reason"]
    few = np.zeros(50, bool)
    few[:6] = True
    reason = detector_block(_spec(), None, {}, few)["reason"]
    assert "6 protected and 44 other" in reason and "at least 10" in reason


@pytest.fixture(scope="module")
def selective_release():
    """Bundled sales, γ = ∞ at the spatial rule's and the risky records (at_risk = "both")."""
    spec = (load_spec(bundled_spec_path())
            .replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("synthesis", n_implicates=20)
            .replace("risk", targets=[RiskTarget(measure="rel:0.1", record_threshold=0.05)],
                     on_risk_failure="warn")
            .replace("model", at_risk="both"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sg.run(spec)


def test_selective_release_runs_the_detector(selective_release):
    """The block holds the AUC of the protected (at-risk) records, counts only, the fixed
    attacker seed (not the release's), and is flagged when there are fewer than 100."""
    res = selective_release.result
    block = res.detector
    assert block["applicable"] is True
    assert block["n_protected"] == int(res.at_risk.at_risk.sum()) >= 10
    assert block["n_protected"] + block["n_other"] == res.data.n_records
    assert 0.0 <= block["ci"][0] <= block["auc"] <= block["ci"][1] <= 1.0
    assert block["seed"] == 0 != res.seed
    assert block["judged"] is False and "too few" in block["note"]
    # no per-record array: scalars, the interval, feature names and their coefficients
    assert all(np.ndim(v) == 0 or len(v) <= 7 for v in block.values())


@pytest.mark.slow
def test_detector_in_release_json_and_report(selective_release, tmp_path):
    """release.json's ``detector`` block validates against the schema (on writing) and the
    report shows the AUC."""
    out = selective_release.write(tmp_path / "sel")
    rec = json.loads((out / "release.json").read_text())
    assert rec["detector"]["auc"] == pytest.approx(selective_release.result.detector["auc"])
    html = (out / "report.html").read_text()
    assert "id='detector-auc'" in html and "Can a protected record be told apart?" in html
