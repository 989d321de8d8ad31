"""The detector of protected records, run on a release where it means something (issue 25).

:func:`synthgeo.risk.detector.detect_protected` asks whether an attacker who sees only
release/ can tell the records a mechanism treated from the rest. It means something only where
the mechanism **selects**: the restricted fit's γ-smoothing of the at-risk records
(``[synthesis] predictive = "posterior"``). Under ``predictive = "cross_fit"`` every record is
drawn from its own leave-out predictive (calibrated or not): nobody is selected, so there is no
label to detect. The detector is then **not run** and release.json says why; running it on
random labels would only measure the detector's own null (its negative control,
``benchmarks/bench_detector.py``), nothing about the release (docs/risk-and-utility.md, "Can a
protected record be told apart?").
"""

from __future__ import annotations

import numpy as np

from synthgeo.io.points import coordinates_m
from synthgeo.risk.detector import MIN_PROTECTED_HARD, detect_protected, release_block

__all__ = ["detector_block", "NOT_SELECTED", "DETECTOR_FOLDS", "DETECTOR_SEED"]

#: Why the detector does not run on a cross-fitted release.
NOT_SELECTED = ("every record is cross-fitted ([synthesis] predictive = \"cross_fit\"): nobody "
                "is selected for treatment, so there is no protected set to tell apart; a "
                "detector on random labels would measure only its own null")
#: K of the detector's cross-fitting (its default).
DETECTOR_FOLDS = 5
#: The attacker's fold and permutation seed: fixed (not the release's seed, which is a key).
DETECTOR_SEED = 0


def detector_block(spec, data, implicates: dict, at_risk: np.ndarray) -> dict:
    """Return release.json's ``detector`` block for a single-response release.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[synthesis] predictive`` and ``[model] gamma`` (γ = 0 treats nobody).
    data : PreparedData
        The released covariates (``X``) and locations (metres).
    implicates : dict of str to xarray.Dataset
        ``"restricted"``: the released implicates (model scale).
    at_risk : ndarray of bool, shape (n_records,)
        The records the restricted fit protected (confidential: the detector's labels, never
        stored).

    Returns
    -------
    dict
        :func:`synthgeo.risk.detector.release_block`: the detector's AUC with its interval
        (counts and settings only), or ``{"applicable": false, "reason": ...}``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> spec = NS(synthesis=NS(predictive="cross_fit"))
    >>> detector_block(spec, None, {}, np.zeros(3, bool))["applicable"]
    False
    """
    if spec.synthesis.predictive == "cross_fit":
        return release_block(None, reason=NOT_SELECTED)
    mask = np.asarray(at_risk, bool)
    n1, n0 = int(mask.sum()), int((~mask).sum())
    if spec.model.gamma_value == 0:
        return release_block(None, reason="[model] gamma = 0: the restricted fit treats "
                                          "nobody (it is the unrestricted model)")
    need = MIN_PROTECTED_HARD * DETECTOR_FOLDS
    if min(n1, n0) < need:
        return release_block(None, reason=(
            f"{n1} protected and {n0} other records: the cross-fitted detector needs at "
            f"least {need} of each (AUC not computed)"))
    Y = implicates["restricted"]["y_synthetic"].transpose("implicate", "record").values
    res = detect_protected(Y, data.X, coordinates_m(data.gdf), mask, folds=DETECTOR_FOLDS,
                           seed=DETECTOR_SEED)
    return release_block(res)
