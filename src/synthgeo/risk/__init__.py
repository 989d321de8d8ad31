"""Disclosure risk of the synthetic responses (docs/risk-and-utility.md).

One job per module: :mod:`~synthgeo.risk.within_eps` (realised within-ε shares and the
implicate-average attack), :mod:`~synthgeo.risk.measure` (``"rel:0.1"`` / ``"abs:10000"``),
:mod:`~synthgeo.risk.predictive` (normal guesses per implicate and record, pooling),
:mod:`~synthgeo.risk.rao_blackwell` (exact probabilities, Rao-Blackwellised risk),
:mod:`~synthgeo.risk.loo` (leave-one-out GP baseline and the leave-out unit's blocks),
:mod:`~synthgeo.risk.loo_units` (attributable risk under each leave-out unit),
:mod:`~synthgeo.risk.baselines` (public regression baseline, average-attack guesses),
:mod:`~synthgeo.risk.records` (per-record scoring), :mod:`~synthgeo.risk.attributable`
(release − stronger baseline by group), :mod:`~synthgeo.risk.verdict` (targets, PASS/FAIL,
the gate),
:mod:`~synthgeo.risk.joint` (identifiable by location and above threshold),
:mod:`~synthgeo.risk.selection` (at-risk by risk, unbiased showcase records) and
:mod:`~synthgeo.risk.neighbours` (the neighbour check).
"""
