"""L partially synthetic implicates from the posterior predictive (docs/model.md, "Synthesis").

For ℓ = 1..L, with posterior draws spread evenly over chains and draws::

    Y†^(ℓ) = X β^(ℓ) + A D^(ℓ) w^(ℓ) + e^(ℓ),   e^(ℓ) ~ N(0, τ²^(ℓ) I)

(Quick, Holan & Wikle 2018, Sect. 2–3; partially synthetic data after Reiter 2003).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from synthgeo.inference.result import GPFit
from synthgeo.model.kriging import kriged_effects

__all__ = ["draw_implicates", "implicate_draw_index"]


def implicate_draw_index(n_chain: int, n_draw: int, n_implicates: int) -> np.ndarray:
    """Return indices into the flattened (chain, draw) sample, evenly spread, (n_implicates,).

    Raises
    ------
    ValueError
        If fewer than 2 implicates are asked for, or more than there are posterior draws.
    """
    total = n_chain * n_draw
    if not (2 <= n_implicates <= total):
        raise ValueError(
            f"`n_implicates` must be between 2 and the {total} retained posterior draws, "
            f"got {n_implicates!r}; raise `[sampling] draws` for more implicates"
        )
    return np.unique(np.round(np.linspace(0, total - 1, n_implicates)).astype(int))


def draw_implicates(
    fit: GPFit,
    X: np.ndarray,
    *,
    n_implicates: int = 100,
    record_id: np.ndarray | None = None,
    random_seed: int | np.random.Generator | None = None,
    at_risk_effect: str = "zero",
) -> xr.Dataset:
    """Draw L partially synthetic responses for every record.

    Parameters
    ----------
    fit : GPFit
        Fitted model whose posterior holds ``beta``, ``w``, ``nugget`` and whose
        ``constant_data`` holds ``scale`` and ``site_index``.
    X : ndarray of shape (n_records, n_coef)
        Design matrix (released covariates; unchanged).
    n_implicates : int, default=100
        L. A warning is issued for L < 5.
    record_id : ndarray of shape (n_records,), optional
        Values of the ``record`` coordinate (the input's record ids).
    random_seed : int, Generator or None
        Seed for the error draws e.
    at_risk_effect : {"zero", "kriged"}, default="zero"
        Effect synthesised at sites with d_s = 0 (at risk under γ = ∞): none (the paper), or
        the kriging mean of w there from the active sites' w of the same draw
        (:func:`synthgeo.model.kriging.kriged_effects`; beyond the paper, docs/model.md).

    Returns
    -------
    xarray.Dataset
        ``y_synthetic`` with dims (``implicate``, ``record``) on the model scale, plus the
        source ``chain``/``draw`` of each implicate as coordinates. ``y_mean`` (implicate,
        record) and ``y_sd`` (implicate) are the normal predictive each value was drawn from,
        N(x_iβ^(ℓ) + d_s w_s^(ℓ), τ²^(ℓ)) (confidential: the Rao-Blackwellised risk of
        :mod:`synthgeo.risk.rao_blackwell` uses them; never released).
    """
    if n_implicates < 5:
        warnings.warn(f"only {n_implicates} implicates: Reiter intervals will be unstable",
                      UserWarning, stacklevel=2)
    rng = np.random.default_rng(random_seed)
    post = fit.idata.posterior
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    flat = implicate_draw_index(n_chain, n_draw, n_implicates)
    ci, di = np.divmod(flat, n_draw)
    beta = post["beta"].values[ci, di]  # (L, p)
    if at_risk_effect not in ("zero", "kriged"):
        raise ValueError(f"`at_risk_effect` must be 'zero' or 'kriged', got {at_risk_effect!r}")
    w = fit.effects(flat)  # (L, S)
    nugget = post["nugget"].values[ci, di]  # (L,)
    const = fit.idata.constant_data
    idx = const["site_index"].values
    d = fit.scales(flat)  # (L, S)
    effect = w * d
    inactive = np.all(d == 0, axis=0)
    if at_risk_effect == "kriged" and inactive.any():
        coords = np.column_stack([const["site_x_m"].values, const["site_y_m"].values])
        kriged = kriged_effects(w, post["phi"].values[ci, di], coords, inactive,
                                n_neighbors=fit.engine.get("n_neighbors"))
        effect[:, inactive] = kriged[:, inactive]
    mean = beta @ X.T + effect[:, idx]
    y = mean + rng.standard_normal(mean.shape) * np.sqrt(nugget)[:, None]
    n_rec = X.shape[0]
    return xr.Dataset(
        {"y_synthetic": (("implicate", "record"), y),
         "y_mean": (("implicate", "record"), mean),
         "y_sd": ("implicate", np.sqrt(nugget))},
        coords={
            "implicate": np.arange(1, len(flat) + 1),
            "record": np.arange(n_rec) if record_id is None else np.asarray(record_id),
            "source_chain": ("implicate", post["chain"].values[ci]),
            "source_draw": ("implicate", post["draw"].values[di]),
        },
    )
