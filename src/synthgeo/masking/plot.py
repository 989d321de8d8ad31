"""The choose-k figure: attacker success and detection rate against k, with the targets."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from synthgeo.masking.sweep import ChooseKResult

__all__ = ["plot_choose_k"]


def plot_choose_k(result: ChooseKResult, *, ax: Any = None) -> Figure:
    """Plot both curves of a k sweep against k, with the acceptable band.

    Parameters
    ----------
    result : ChooseKResult
        Output of :func:`~synthgeo.masking.choose_k`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default a new 7 × 4.5 inch figure (no pyplot state is touched).

    Returns
    -------
    matplotlib.figure.Figure
        Attacker success (red) and detection rate (blue) per k with 95% Monte Carlo intervals
        (±1.96 SE), the target regions shaded in the curves' colours (attacker ≤ target,
        detection ≥ target), the k meeting both shaded green, the chosen k as a dashed line.
        The x axis is logarithmic, labelled with k and the median displacement in metres.

    Raises
    ------
    TypeError
        If `result` is not a ChooseKResult.
    """
    if not isinstance(result, ChooseKResult):
        raise TypeError(f"`result` must be a ChooseKResult, got {type(result).__name__}")
    t = result.table
    if ax is None:
        fig = Figure(figsize=(7.0, 4.5), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    k = t["k"].to_numpy(dtype=float)
    max_att, min_det = result.max_attacker_success, result.min_detection_rate
    ax.axhspan(0.0, max_att, color="tab:red", alpha=0.12, lw=0,
               label=f"attacker target (≤ {max_att:.0%})")
    attacker_only = bool(result.utility.get("attacker_only"))
    kept = "passes_on_true_locations" in result.utility and not result.utility[
        "passes_on_true_locations"]  # pre-registered test, no excess in the true data
    if not attacker_only:
        ax.axhspan(min_det, 1.0, color="tab:blue", alpha=0.12, lw=0,
                   label=f"{'no-excess' if kept else 'detection'} target (≥ {min_det:.0%})")
    # the acceptable band: k meeting both targets, each spanning halfway (in log k) to neighbours
    edges = np.sqrt(k[:-1] * k[1:]) if len(k) > 1 else np.array([])
    lo = np.concatenate([[k[0] / 1.15], edges])
    hi = np.concatenate([edges, [k[-1] * 1.15]])
    first = True
    for i in np.flatnonzero(t["meets_both"].to_numpy()):
        ax.axvspan(lo[i], hi[i], color="tab:green", alpha=0.18, lw=0,
                   label="k meeting both targets" if first else None)
        first = False
    z = 1.96
    ax.errorbar(k, t["attacker_success"], yerr=z * t["attacker_success_se"].fillna(0.0),
                color="tab:red", marker="o", capsize=3, label="attacker success")
    if kept:
        ax.plot(k, t["agreement_rate"], color="tab:blue", marker="s",
                label="masks showing no excess either (agreement)")
    elif not attacker_only:
        ax.errorbar(k, t["detection_rate"], yerr=z * t["detection_rate_se"], color="tab:blue",
                    marker="s", capsize=3, label="detection rate (utility test passes)")
    if result.chosen_k is not None:
        ax.axvline(result.chosen_k, color="black", ls="--", lw=1,
                   label=f"chosen k = {result.chosen_k}")
        title = f"Chosen k = {result.chosen_k}"
    else:
        title = "No k on the grid meets both targets"
    ax.set_xscale("log")
    ax.set_xlim(lo[0], hi[-1])
    ax.xaxis.set_major_locator(FixedLocator(k))
    ax.xaxis.set_minor_locator(NullLocator())
    disp = t["median_displacement_m"].to_numpy()
    ax.set_xticklabels([f"{int(kk)}\n{d:.0f} m" for kk, d in zip(k, disp, strict=True)])
    ax.set_xlabel("k (households), and median displacement")
    ax.set_ylabel("share")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{title} ({result.n_cases} cases, {result.n_replicates} masks per k)")
    ax.legend(loc="best", fontsize="small", framealpha=0.9)
    return fig
