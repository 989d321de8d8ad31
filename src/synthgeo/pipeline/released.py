"""The released model in one plain label (release.json's ``released_label``, report, console).

A board must not read "restricted model" when ``[risk] protect = "targets"`` released a
cross-fitted round with input noise: every place that names the released implicates takes
its words from :func:`released_label` (release.json, the report's heading and verdict row,
the console's protect and closing lines). The label says how the released implicates were
made, with the noise actually drawn (κ, model scale; release.json's
``synthesis.input_noise.sd``), and, under ``protect = "targets"``, the round that was released.
Aggregates only: no record's value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["released_label", "released_label_of"]


def _gamma(gamma) -> str:
    """γ as written for a board: "∞" for the paper's restricted model, else the number/"auto"."""
    if isinstance(gamma, str):
        return "∞" if gamma == "inf" else gamma
    return "∞" if math.isinf(float(gamma)) else f"{float(gamma):g}"


def _sd(value) -> str:
    """One noise sd (model scale), two significant figures; several responses: name = sd."""
    if isinstance(value, Mapping):
        return ", ".join(f"{name} {float(v):.2g}" for name, v in value.items())
    return f"{float(value):.2g}"


def released_label(spec, *, input_noise_sd: float | Mapping[str, float] | None = None,
                   mean_noise_sd: float | None = None,
                   protection: Mapping | None = None) -> str:
    """Return how the released implicates were made, in one plain label.

    Parameters
    ----------
    spec : ReleaseSpec
        The released round's spec (``[synthesis] predictive``, ``cross_fit_calibration``,
        ``input_noise``, ``input_noise_draws``, ``mean_noise``; ``[model] gamma`` and
        ``at_risk_weight``).
    input_noise_sd : float or mapping of str to float, optional
        κ, the input noise sd drawn (model scale); several responses: one per response, by
        name. Default: the spec's number, or "auto" when the spec says "auto".
    mean_noise_sd : float, optional
        The mean noise sd drawn (model scale); default: the spec's number or "auto".
    protection : mapping, optional
        release.json's ``protection`` block (``[risk] protect = "targets"``): its
        ``released_round`` and ``max_rounds`` are named.

    Returns
    -------
    str
        E.g. ``"restricted (differential smoothing, γ = ∞)"`` or ``"cross-fitted
        (calibrated, covariates), input noise κ = 0.62, implicates of y*; round 4 of at most
        4 (protect = "targets")"``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> spec = NS(synthesis=NS(predictive="cross_fit", cross_fit_calibration="covariates",
    ...           input_noise="auto", input_noise_draws="y_star", mean_noise=0.0),
    ...           model=NS(gamma="inf", at_risk_weight="binary"))
    >>> print(released_label(spec, input_noise_sd=0.6213,
    ...                      protection={"released_round": 4, "max_rounds": 4}))
    ... # doctest: +NORMALIZE_WHITESPACE
    cross-fitted (calibrated, covariates), input noise κ = 0.62, implicates of y*;
    round 4 of at most 4 (protect = "targets")
    >>> released_label(NS(synthesis=NS(predictive="posterior"),
    ...                   model=NS(gamma="inf", at_risk_weight="binary")))
    'restricted (differential smoothing, γ = ∞)'
    """
    s = spec.synthesis
    if getattr(s, "predictive", "posterior") != "cross_fit":
        weight = getattr(spec.model, "at_risk_weight", "binary")
        label = ("restricted (risk-weighted pseudo-likelihood)" if weight == "pseudo_likelihood"
                 else f"restricted (differential smoothing, γ = {_gamma(spec.model.gamma)})")
    else:
        calibration = getattr(s, "cross_fit_calibration", "none")
        label = ("cross-fitted (raw, no calibration)" if calibration == "none"
                 else f"cross-fitted (calibrated, {calibration})")
        mean = getattr(s, "mean_noise", 0)
        if mean != 0:
            sd = mean_noise_sd if mean_noise_sd is not None else mean
            label += f", mean noise sd {sd if isinstance(sd, str) else _sd(sd)}"
        noise = getattr(s, "input_noise", 0)
        if noise != 0:
            kappa = input_noise_sd if input_noise_sd is not None else noise
            label += f", input noise κ = {kappa if isinstance(kappa, str) else _sd(kappa)}"
            if getattr(s, "input_noise_draws", "y") == "y_star":
                label += ", implicates of y*"
    if protection is not None:
        label += (f"; round {protection['released_round']} of at most "
                  f"{protection['max_rounds']} (protect = \"targets\")")
    return label


def released_label_of(result) -> str:
    """Return :func:`released_label` of a run's result (its spec, noise drawn, protection).

    Parameters
    ----------
    result : ReleaseResult or SequentialResult
        From :func:`synthgeo.pipeline.run_release`; the noise sds are read from the released
        implicates (``attrs["input_noise"]``, ``attrs["mean_noise"]``) or, for several
        responses, from each response's ``input_noise``.

    Returns
    -------
    str
        The label (no record's value).
    """
    responses = getattr(result, "responses", None)
    kappa = mean = None
    if responses is not None:  # several responses: one κ per gaussian response
        drawn = {r.name: (r.input_noise or {}).get("sd") for r in responses
                 if getattr(r, "input_noise", None)}
        drawn = {k: v for k, v in drawn.items() if v is not None}
        kappa = (next(iter(drawn.values())) if len(drawn) == 1 else drawn) or None
    else:
        released = (getattr(result, "implicates", None) or {}).get("restricted")
        attrs = {} if released is None else released.attrs
        kappa = (attrs.get("input_noise") or {}).get("sd")
        mean = (attrs.get("mean_noise") or {}).get("sd")
    return released_label(result.spec, input_noise_sd=kappa, mean_noise_sd=mean,
                          protection=getattr(result, "protection", None))
