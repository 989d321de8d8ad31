"""Posterior mass piled at a prior bound of the GP grid: the coded warning's one home.

The grid integrates (log range, logit nugget share) over the prior box, whose range bounds come
from the data (:func:`synthgeo.model.restricted_gp.default_priors`: the median distance from a
location to its nearest other, and the largest distance between locations). A posterior that
piles against such a bound is cut there: its interval cannot hold the true value beyond it, and
M and the at-risk set follow (break-it trial 2026-12-07: a true range below the prior minimum
put 68–75 % of the records at risk, with no grid problem reported, since mass on a prior bound
is not an edge problem of the grid). Rule and threshold: docs/inference.md, "Posterior mass at
a prior bound".
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["posterior_at_prior_bound", "BOUND_BAND", "BOUND_MASS", "PRIOR_FACTOR"]

#: The band next to a bound, as a share of the prior box's width on the grid's axis (log range
#: in metres; logit nugget share): 5 % of a range box from 753 m to 108 km (the bundled job) is
#: a factor of 1.28 above the minimum.
BOUND_BAND = 0.05
#: Posterior mass in that band above which the warning fires (and above :data:`PRIOR_FACTOR`
#: times the prior's own mass there). Measured 2026-12-07 (docs/inference.md): the bundled
#: job, sacramento_all, the paper simulation and Lucas County hold at most 0.002 there; true
#: ranges 1.5 times the minimum at most 0.073; a true range 3 times below it 0.25–0.62.
BOUND_MASS = 0.2
#: The prior's own mass in the band, times this, must be exceeded too: the range's prior is
#: uniform in metres, so on the log axis it leans on the maximum (0.2 to 0.3 of it in the top
#: band for a box of 150 to 1,800 times), and a posterior that is its prior is not flagged.
PRIOR_FACTOR = 2.0

#: (axis, side, parameter words, how a bound value is written)
_BOUNDS = (
    ("log_range_m", "lower", "the range", "prior minimum", lambda v: f"{np.exp(v):,.0f} m"),
    ("log_range_m", "upper", "the range", "prior maximum", lambda v: f"{np.exp(v):,.0f} m"),
    ("logit_nugget_share", "upper", "the nugget share τ²/(σ² + τ²)", "upper bound",
     lambda v: f"{expit(v):.3g}"),
)
_WHY = {
    ("log_range_m", "lower"): "the data favour a range shorter than the prior allows (the "
                              "minimum is the median distance from a location to its nearest "
                              "other), so the interval cannot hold it and M, the at-risk radius, "
                              "follows the bound; set `[model.priors] range_min_m` lower if a "
                              "shorter range is plausible, and read the at-risk share with care",
    ("log_range_m", "upper"): "the data favour a range longer than the prior allows (the "
                              "maximum is the largest distance between locations): a trend "
                              "across the whole area? Set `[model.priors] range_max_m`, or add "
                              "the trend's covariates",
    ("logit_nugget_share", "upper"): "the data show almost no spatial effect at the spacing of "
                                     "the locations (a true range far below the prior minimum "
                                     "looks so too), and the range's posterior is mostly its "
                                     "prior; read M and the at-risk share with care",
}


def _prior_mass(axis, side: str, band: float) -> float:
    """Return the prior's mass in the band (uniform in metres, or in the nugget share).

    The grid's priors (:class:`~synthgeo.inference.grid_posterior.ConjugatePrior`) on the
    axis's natural scale: exp of the log range, expit of the logit share.
    """
    natural = np.exp if axis.name == "log_range_m" else expit
    lo, hi = natural(axis.lower), natural(axis.upper)
    inner = natural(axis.lower + band) if side == "lower" else natural(axis.upper - band)
    return float(abs(inner - (lo if side == "lower" else hi)) / (hi - lo))


def posterior_at_prior_bound(quadrature, label: str = "model") -> list[dict]:
    """Return the prior bounds the grid posterior piles against (empty: none).

    Checked: the range's lower and upper bounds and the nugget share's upper bound. A bound
    counts when the posterior mass within :data:`BOUND_BAND` of the prior box's width next to
    it (on the grid's axis) exceeds :data:`BOUND_MASS` and :data:`PRIOR_FACTOR` times the
    prior's mass there. The nugget share's lower bound is not
    checked: a posterior near no nugget is a well-fitted smooth surface, not a cut interval.

    Parameters
    ----------
    quadrature : synthgeo.inference.quadrature.Quadrature
        The grid posterior over ``log_range_m`` and ``logit_nugget_share``.
    label : str
        The fit's name, for the message (``"unrestricted"``).

    Returns
    -------
    list of dict
        Per bound: ``parameter`` (``"range"`` or ``"nugget_share"``), ``bound``
        (``"lower"``/``"upper"``), ``value`` (the bound: metres, or a share), ``band`` (the
        band's share of the box), ``mass`` (posterior mass in the band) and ``message`` (one
        line, the coded warning ``posterior_at_prior_bound``'s words; no data value).

    Examples
    --------
    >>> from synthgeo.inference.quadrature import Axis, integrate
    >>> axes = [Axis(name="log_range_m", lower=np.log(100.0), upper=np.log(10_000.0)),
    ...         Axis(name="logit_nugget_share", lower=-9.0, upper=7.0)]
    >>> q = integrate(lambda p: -4.0 * p[:, 0] - 0.5 * p[:, 1] ** 2, axes)  # falls from 100 m
    >>> [(b["parameter"], b["bound"], round(b["mass"], 2)) for b in posterior_at_prior_bound(q)]
    [('range', 'lower', 0.6)]
    """
    names = [a.name for a in quadrature.axes]
    found = []
    for axis, side, words, bound_words, show in _BOUNDS:
        if axis not in names:
            continue
        a = quadrature.axes[names.index(axis)]
        band = BOUND_BAND * (a.upper - a.lower)
        if side == "lower":
            value, mass = a.lower, quadrature.cdf(axis, a.lower + band)
        else:
            value, mass = a.upper, 1.0 - quadrature.cdf(axis, a.upper - band)
        if not mass > max(BOUND_MASS, PRIOR_FACTOR * _prior_mass(a, side, band)):
            continue
        found.append({
            "parameter": "range" if axis == "log_range_m" else "nugget_share",
            "bound": side, "value": float(np.exp(value) if axis == "log_range_m"
                                          else expit(value)),
            "band": BOUND_BAND, "mass": float(mass),
            "message": (f"{label} fit: {mass:.0%} of {words}'s posterior mass lies against its "
                        f"{bound_words} {show(value)} (within {BOUND_BAND:.0%} of the prior "
                        f"box next to it; above {BOUND_MASS:.0%} is flagged): {_WHY[axis, side]}"),
        })
    return found
