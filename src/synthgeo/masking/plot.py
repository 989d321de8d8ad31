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
        Per method (donut solid, areal dashed): the stronger attacker's success (red, with 95%
        Monte Carlo intervals ±1.96 SE), the naive attacker's (orange) and the detection rate
        (blue); the random-guess floor max(1/k, 1/n_known) (grey dotted); the target regions
        shaded in the curves' colours, the k meeting both targets (some method) shaded green,
        the chosen k as a dashed line.
        The x axis is logarithmic, labelled with k and the median displacement in metres.

    Raises
    ------
    TypeError
        If `result` is not a ChooseKResult.
    """
    if not isinstance(result, ChooseKResult):
        raise TypeError(f"`result` must be a ChooseKResult, got {type(result).__name__}")
    t = result.table
    if "method" not in t:
        t = t.assign(method="donut")
    if ax is None:
        fig = Figure(figsize=(7.5, 5.0), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    k = np.unique(t["k"].to_numpy(dtype=float))
    max_att, min_det = result.max_attacker_success, result.min_detection_rate
    ax.axhspan(0.0, max_att, color="tab:red", alpha=0.12, lw=0,
               label=f"attacker target (≤ {max_att:.0%})")
    attacker_only = bool(result.utility.get("attacker_only"))
    kept = "passes_on_true_locations" in result.utility and not result.utility[
        "passes_on_true_locations"]  # pre-registered test, no excess in the true data
    if not attacker_only:
        ax.axhspan(min_det, 1.0, color="tab:blue", alpha=0.12, lw=0,
                   label=f"{'no-excess' if kept else 'detection'} target (≥ {min_det:.0%})")
    # the acceptable band: k meeting both targets (any method), halfway (in log k) to neighbours
    edges = np.sqrt(k[:-1] * k[1:]) if len(k) > 1 else np.array([])
    lo = np.concatenate([[k[0] / 1.15], edges])
    hi = np.concatenate([edges, [k[-1] * 1.15]])
    good = set(t.loc[t["meets_both"], "k"].astype(float))
    first = True
    for i in np.flatnonzero([kk in good for kk in k]):
        ax.axvspan(lo[i], hi[i], color="tab:green", alpha=0.18, lw=0,
                   label="k meeting both targets (some method)" if first else None)
        first = False
    z = 1.96
    styles = {"donut": ("-", "o"), "areal": ("--", "D")}
    for method, sub in t.groupby("method", sort=False):
        ls, mk = styles.get(method, ("-.", "^"))
        kk = sub["k"].to_numpy(dtype=float)
        ax.errorbar(kk, sub["attacker_success"], yerr=z * sub["attacker_success_se"].fillna(0.0),
                    color="tab:red", ls=ls, marker=mk, capsize=3,
                    label=f"{method}: stronger attacker")
        if "attacker_success_naive" in sub:
            ax.plot(kk, sub["attacker_success_naive"], color="tab:orange", ls=ls, marker=mk,
                    ms=4, lw=1, label=f"{method}: naive attacker")
        if "guess_floor" in sub and method == t["method"].iloc[0]:
            ax.plot(kk, sub["guess_floor"], color="grey", ls=":", lw=1,
                    label="random-guess floor max(1/k, 1/n_known)")
        if kept:
            ax.plot(kk, sub["agreement_rate"], color="tab:blue", ls=ls, marker=mk,
                    label=f"{method}: masks showing no excess either")
        elif not attacker_only:
            ax.errorbar(kk, sub["detection_rate"], yerr=z * sub["detection_rate_se"],
                        color="tab:blue", ls=ls, marker=mk, capsize=3,
                        label=f"{method}: detection rate")
    if result.chosen_k is not None:
        method = getattr(result, "chosen_method", None) or "donut"
        ax.axvline(result.chosen_k, color="black", ls="--", lw=1,
                   label=f"chosen: {method}, k = {result.chosen_k}")
        title = f"Chosen: {method} mask, k = {result.chosen_k}"
    else:
        title = "No method and k on the grid meets the targets"
    ax.set_xscale("log")
    ax.set_xlim(lo[0], hi[-1])
    ax.xaxis.set_major_locator(FixedLocator(k))
    ax.xaxis.set_minor_locator(NullLocator())
    first_m = t[t["method"] == t["method"].iloc[0]]
    disp = first_m.set_index("k")["median_displacement_m"].reindex(k.astype(int)).to_numpy()
    ax.set_xticklabels([f"{int(kk)}\n{d:.0f} m" for kk, d in zip(k, disp, strict=True)])
    ax.set_xlabel(f"k (households), and median displacement ({t['method'].iloc[0]})")
    ax.set_ylabel("share")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{title} ({result.n_cases} cases, {result.n_replicates} masks per k)")
    ax.legend(loc="best", fontsize="small", framealpha=0.9)
    return fig
