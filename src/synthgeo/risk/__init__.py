"""Disclosure risk of the synthetic responses (docs/risk-and-utility.md).

One job per module: :mod:`~synthgeo.risk.within_eps` (realised within-ε shares and the
implicate-average attack), :mod:`~synthgeo.risk.measure` (``"rel:0.1"`` / ``"abs:10000"``),
:mod:`~synthgeo.risk.predictive` (normal guesses per implicate and record, pooling),
:mod:`~synthgeo.risk.rao_blackwell` (exact probabilities, Rao-Blackwellised risk),
:mod:`~synthgeo.risk.loo` (leave-one-out GP baseline and the leave-out unit's blocks),
:mod:`~synthgeo.risk.loo_units` (attributable risk under each leave-out unit),
:mod:`~synthgeo.risk.baselines`
(public regression baseline, average-attack guesses), :mod:`~synthgeo.risk.records`
(per-record scoring and Monte Carlo moments), :mod:`~synthgeo.risk.attributable` (release −
the one stronger baseline, per record and by group, with its se),
:mod:`~synthgeo.risk.noise` (decisions on Monte Carlo estimates: bounds, counts, the largest,
rises), :mod:`~synthgeo.risk.verdict` (targets, PASS/FAIL, the gate),
:mod:`~synthgeo.risk.joint` (identifiable by location and possibly above threshold),
:mod:`~synthgeo.risk.selection` (at-risk by risk, unbiased showcase records),
:mod:`~synthgeo.risk.fresh_draws` (the records selected by risk, judged on fresh posterior
draws) and :mod:`~synthgeo.risk.neighbours` (the neighbour check).
"""
