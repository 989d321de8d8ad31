"""Both attackers in a verdict line: the own-value figure, the release attacker's, who decided."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from synthgeo.config.risk import RiskTarget
from synthgeo.risk.verdict import (
    TargetCheck,
    decided_by,
    pair_text,
    paired_checks,
    reported_checks,
)


def _own(criterion="max_attributable_record", upper=0.04, status="PASS", **kw):
    return TargetCheck(measure="rel:0.1", attack="share", criterion=criterion, limit=0.1,
                       record_threshold=None, value=0.01, lower=0.0, upper=upper,
                       n_above=None, status=status, **kw)


def _attacker(own, value, status):
    return dataclasses.replace(own, attacker="release_attacker", value=value, lower=value,
                               upper=value, status=status)


@pytest.mark.parametrize(("own_upper", "own_status", "ra", "ra_status", "who"), [
    (0.04, "PASS", 0.30, "FAIL", "the release attacker"),
    (0.20, "FAIL", 0.05, "PASS", "own values"),
    (0.20, "FAIL", 0.30, "FAIL", "both"),
    (0.08, "PASS", 0.05, "PASS", "own values"),  # both pass: the nearer its limit decided
    (0.04, "PASS", 0.09, "PASS", "the release attacker"),
])
def test_which_attacker_decided(own_upper, own_status, ra, ra_status, who):
    own = _own(upper=own_upper, status=own_status)
    other = _attacker(own, ra, ra_status)
    assert decided_by(own, other, True) == who
    assert decided_by(own, other, False).startswith("own values (the release attacker is "
                                                    "reported, not judged)")
    assert decided_by(own, None, False).startswith("own values (no release attacker")


def test_pairs_follow_the_verdict_and_each_line_names_both():
    own = _own()
    share = _own("max_share_above", upper=0.0, n_possible=0, n_certain=0)
    share = dataclasses.replace(share, n_above=0, value=0.0)
    checks = [own, _attacker(own, 0.30, "FAIL"), share, _attacker(share, 0.9, "FAIL")]
    pairs = paired_checks(checks)
    assert [(p[0].criterion, p[1].value, p[2]) for p in pairs] == [
        ("max_attributable_record", 0.30, True), ("max_share_above", 0.9, True)]
    line = pair_text(*pairs[0])
    assert line.startswith("rel:0.1 share max_attributable_record (limit 0.1 on the upper bound)"
                           ": own values 0.01 [0, 0.04] PASS; release attacker 0.3 (no Monte Carlo error) FAIL")
    assert line.endswith("→ FAIL, decided by the release attacker")
    # reported, not judged: the figure beside, the status the own values'
    reported = [_attacker(own, 0.30, "FAIL")]
    (pair,) = paired_checks([own], reported)
    assert pair[2] is False
    text = pair_text(*pair)
    assert "release attacker 0.3 (no Monte Carlo error) reported, not judged" in text
    assert text.endswith("→ PASS, decided by own values (the release attacker is reported, "
                         "not judged)")


def test_reported_checks_judge_the_attacker_figures_aside():
    target = RiskTarget(measure="rel:0.1", attack="share", max_attributable_record=0.1,
                        record_threshold=0.05, max_share_above=0.01)
    a = np.array([0.0, 0.2, 0.01])
    checks = reported_checks([target], {("rel:0.1", "share"): a})
    assert [(c.criterion, c.attacker, c.status) for c in checks] == [
        ("max_attributable_record", "release_attacker", "FAIL"),
        ("max_share_above", "release_attacker", "FAIL")]
    assert checks[0].value == pytest.approx(0.2) and checks[1].n_above == 1
    assert reported_checks([target], None) == ()
