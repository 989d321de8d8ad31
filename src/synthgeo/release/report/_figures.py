"""The report's figures: matplotlib (Agg) on plain arrays and tables, no network, no basemap.

Each ``plot_*`` function takes plain inputs (arrays in metres, DataFrames), returns a
:class:`matplotlib.figure.Figure`, and never touches a :class:`ReleaseResult`, so it can be
tested on hand-made inputs. :func:`to_data_uri` turns a figure into an embeddable PNG.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import io
from collections.abc import Iterator, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Circle  # noqa: E402

__all__ = [
    "to_data_uri", "reusing", "reused", "plot_record_map", "plot_surfaces",
    "plot_synthetic_histograms",
    "plot_risk_by_group", "plot_risk_distribution", "plot_reiter_intervals", "plot_rank",
    "plot_spatial_k_histogram", "plot_pmse_regions", "MODEL_COLOURS",
]

#: One colour per model, used in every figure.
MODEL_COLOURS = {"confidential": "black", "unrestricted": "#d95f02", "restricted": "#1b9e77",
                 "suppressed": "#7570b3"}
_AT_RISK = "#c00000"
_DPI = 96


#: Figures of an earlier report that the report being drawn reuses (``{id: data URI}``).
_REUSED: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "synthgeo_reused_figures", default={})


@contextlib.contextmanager
def reusing(uris: Mapping[str, str]) -> Iterator[None]:
    """Inside the block, :func:`reused` serves these figures (``{figure id: data URI}``).

    For ``synthgeo draw``: the earlier report's figures that cannot differ
    (:mod:`synthgeo.release.report._reuse`).

    Examples
    --------
    >>> with reusing({"fig-x": "data:image/png;base64,AA"}):
    ...     reused("fig-x")
    'data:image/png;base64,AA'
    >>> reused("fig-x") is None
    True
    """
    token = _REUSED.set(dict(uris))
    try:
        yield
    finally:
        _REUSED.reset(token)


def reused(fig_id: str) -> str | None:
    """Return the data URI to reuse for figure ``fig_id`` (see :func:`reusing`), or None."""
    return _REUSED.get().get(fig_id)


def to_data_uri(fig: Figure) -> str:
    """Render ``fig`` as PNG and return a ``data:image/png;base64,...`` URI; closes ``fig``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    str
        The URI, for an ``<img src=...>`` that needs no network.
    """
    buf = io.BytesIO()
    # no "Software" entry: the bytes then depend on the figure only
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _km(ax, xlabel: bool = True) -> None:
    ax.set_aspect("equal")
    if xlabel:
        ax.set_xlabel("easting (km)")
    ax.set_ylabel("northing (km)")


def plot_record_map(coords_m: np.ndarray, at_risk: np.ndarray, M_m: float, *,  # noqa: N803
                    crs_name: str = "") -> Figure:
    """Map of the records, at-risk records marked, a circle of radius M around each.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected coordinates in metres.
    at_risk : ndarray of bool, shape (n_records,)
        At-risk flag.
    M_m : float
        The at-risk distance M in metres (circle radius).
    crs_name : str, optional
        Shown in the title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    xy = np.asarray(coords_m, float) / 1000.0
    risk = np.asarray(at_risk, bool)
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    ax.scatter(*xy[~risk].T, s=9, c="#555555", label=f"record ({int((~risk).sum())})")
    ax.scatter(*xy[risk].T, s=40, marker="^", c=_AT_RISK,
               label=f"at-risk record ({int(risk.sum())})", zorder=3)
    for x, y in xy[risk]:
        ax.add_patch(Circle((x, y), M_m / 1000.0, fill=False, ec=_AT_RISK, lw=0.8, ls="--"))
    ax.plot([], [], ls="--", c=_AT_RISK, lw=0.8, label=f"M = {M_m:,.0f} m around each")
    _km(ax)
    ax.legend(loc="best", fontsize=8, framealpha=0.9)
    ax.set_title(f"Records and at-risk records{' (' + crs_name + ')' if crs_name else ''}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    return fig


def plot_surfaces(
    xs_m: np.ndarray, ys_m: np.ndarray, surfaces: Mapping[str, np.ndarray],
    coords_m: np.ndarray, at_risk: np.ndarray,
) -> Figure:
    """Posterior mean surfaces of w side by side on one diverging colour scale.

    Parameters
    ----------
    xs_m : ndarray of shape (n_x,)
        Grid eastings in metres.
    ys_m : ndarray of shape (n_y,)
        Grid northings in metres.
    surfaces : dict of str to ndarray of shape (n_y, n_x)
        E[w(s) | y] per model (model units, e.g. log-dollars).
    coords_m : ndarray of shape (n_records, 2)
        Records, metres (drawn as dots).
    at_risk : ndarray of bool, shape (n_records,)
        At-risk records (circled).

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = list(surfaces)
    vmax = max(float(np.nanmax(np.abs(s))) for s in surfaces.values()) or 1.0
    fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 5.6), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    xy = np.asarray(coords_m, float) / 1000.0
    risk = np.asarray(at_risk, bool)
    dx = (xs_m[1] - xs_m[0]) / 2000.0 if len(xs_m) > 1 else 0.5
    dy = (ys_m[1] - ys_m[0]) / 2000.0 if len(ys_m) > 1 else 0.5
    extent = (xs_m[0] / 1000 - dx, xs_m[-1] / 1000 + dx, ys_m[0] / 1000 - dy, ys_m[-1] / 1000 + dy)
    im = None
    for ax, name in zip(axes[0], names, strict=True):
        im = ax.imshow(surfaces[name], origin="lower", extent=extent, cmap="RdBu_r",
                       vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.scatter(*xy.T, s=3, c="black", alpha=0.6)
        ax.scatter(*xy[risk].T, s=90, facecolors="none", edgecolors="black", lw=1.4,
                   label="at-risk record")
        ax.set_title(f"{name}: posterior mean of w(s)", fontsize=10)
        _km(ax)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", fontsize=8, frameon=False)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.85, label="E[w(s) | y] (model scale)")
    return fig


def plot_pmse_regions(by_region: pd.DataFrame, coords_m: np.ndarray) -> Figure:
    """Per-region pMSE ratio against the paired null, one map panel per model.

    Parameters
    ----------
    by_region : pandas.DataFrame
        :meth:`synthgeo.pipeline.general_utility.GeneralUtility.by_region`: ``model, x_min_m,
        x_max_m, y_min_m, y_max_m, n_records, ratio``.
    coords_m : ndarray of shape (n_records, 2)
        Records, metres (drawn as dots).

    Returns
    -------
    matplotlib.figure.Figure
        Cells coloured by the ratio on a log scale centred on 1 (white: told apart as often
        as a relabelled confidential file; red: told apart more), the ratio written in each.
    """
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    names = list(dict.fromkeys(by_region["model"]))
    ratio = by_region["ratio"].to_numpy(float)
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    top = float(max(2.0, np.max(finite), 1.0 / np.min(finite))) if finite.size else 2.0
    norm = LogNorm(vmin=1.0 / top, vmax=top)
    cmap = plt.get_cmap("RdBu_r")
    fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 5.6), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    xy = np.asarray(coords_m, float) / 1000.0
    for ax, name in zip(axes[0], names, strict=True):
        for r in by_region[by_region["model"] == name].itertuples():
            ok = np.isfinite(r.ratio) and r.ratio > 0
            ax.add_patch(Rectangle((r.x_min_m / 1000, r.y_min_m / 1000),
                                   (r.x_max_m - r.x_min_m) / 1000,
                                   (r.y_max_m - r.y_min_m) / 1000,
                                   fc=cmap(norm(r.ratio)) if ok else "#dddddd", ec="#777777",
                                   lw=0.5, alpha=0.85))
            ax.text((r.x_min_m + r.x_max_m) / 2000, (r.y_min_m + r.y_max_m) / 2000,
                    f"{r.ratio:.2f}" if ok else "–", ha="center", va="center", fontsize=7,
                    bbox={"fc": "white", "alpha": 0.6, "lw": 0, "pad": 1})
        ax.scatter(*xy.T, s=2, c="black", alpha=0.35)
        ax.set_title(f"{name}: pMSE ratio by region (paired null)", fontsize=10)
        ax.autoscale_view()
        _km(ax)
        ax.grid(alpha=0.2)
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(),
                      shrink=0.85, label="pMSE ratio (1 = as a relabelled confidential file)")
    ticks = [t for t in 2.0 ** np.arange(-6, 7) if 1.0 / top <= t <= top]
    cb.minorticks_off()
    cb.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
    return fig


def _money(v: float, dollars: bool) -> str:
    if not dollars:
        return f"{v:.3g}"
    return f"${v / 1000:,.0f}k" if abs(v) >= 1000 else f"${v:,.0f}"


def plot_synthetic_histograms(
    panels: Sequence[Mapping], *, eps: float | None = None, p: float | None = None,
    dollars: bool = True, value_label: str = "sale price",
) -> Figure:
    """Per-record histograms of synthetic values, both models, the true value marked.

    The paper's Figures 3 and 5 (Quick, Holan & Wikle 2018): for a record the model leaks,
    unrestricted synthetic values sit on the truth; restricted ones do not.

    Parameters
    ----------
    panels : sequence of dict
        One per record: ``"title"`` (str), ``"truth"`` (float, back-transformed scale) and
        ``"synthetic"`` (dict of model name to ndarray of shape (n_implicates,), same scale).
    eps : float, optional
        Absolute tolerance, shaded as truth ± eps (e.g. dollars).
    p : float, optional
        Relative tolerance (fraction), drawn as dotted lines at truth·(1 ± p).
    dollars : bool, default=True
        Format the axis as dollars.
    value_label : str, default="sale price"
        Axis label.

    Returns
    -------
    matplotlib.figure.Figure
    """
    n = max(len(panels), 1)
    ncol = min(4, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.9 * nrow), squeeze=False,
                             layout="constrained")
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.ravel(), panels):
        truth = float(panel["truth"])
        values = [np.asarray(v, float) for v in panel["synthetic"].values()]
        lo = min([truth] + [float(np.quantile(v, 0.005)) for v in values])
        hi = max([truth] + [float(np.quantile(v, 0.995)) for v in values])
        pad = 0.05 * (hi - lo or abs(truth) or 1.0)
        n_bins = int(np.clip(min(len(v) for v in values) // 3, 10, 40))  # L/3, in [10, 40]
        bins = np.linspace(lo - pad, hi + pad, n_bins + 1)
        if eps:
            ax.axvspan(truth - eps, truth + eps, color="#f4d03f", alpha=0.35, lw=0,
                       label=f"truth ± {_money(eps, dollars)}")
        if p:
            for f in (1 - p, 1 + p):
                ax.axvline(truth * f, color="#7f6000", ls=":", lw=1)
        for name, v in panel["synthetic"].items():
            ax.hist(np.clip(v, bins[0], bins[-1]), bins=bins, histtype="stepfilled",
                    alpha=0.45, color=MODEL_COLOURS.get(name, None), label=name)
        ax.axvline(truth, color=_AT_RISK, lw=2, label="true value")
        ax.set_title(panel["title"], fontsize=8.5)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_formatter(lambda v, _pos: _money(v, dollars))
        ax.set_xlabel(value_label, fontsize=8)
    axes.ravel()[0].legend(fontsize=7, loc="upper left")
    return fig


def plot_risk_by_group(summary: pd.DataFrame) -> Figure:
    """Mean per-record risk by group, unrestricted vs restricted, one panel per measure.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`synthgeo.risk.within_eps.summarise_risk` output (columns ``group``, ``measure``,
        ``n_records``, ``mean_unrestricted``, ``mean_restricted``, ``reduction``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    measures = list(dict.fromkeys(summary["measure"]))
    fig, axes = plt.subplots(1, len(measures), figsize=(5.2 * len(measures), 3.8),
                             squeeze=False, layout="constrained")
    top_all = np.nanmax(summary[["mean_unrestricted", "mean_restricted"]].to_numpy(float))
    ylim = min(1.05, 1.3 * top_all + 0.05) if np.isfinite(top_all) else 1.05
    for ax, measure in zip(axes[0], measures, strict=True):
        part = summary[summary["measure"] == measure].reset_index(drop=True)
        x = np.arange(len(part))
        for j, model in enumerate(("unrestricted", "restricted")):
            vals = part[f"mean_{model}"].to_numpy(float)
            ax.bar(x + (j - 0.5) * 0.38, np.nan_to_num(vals), width=0.38, label=model,
                   color=MODEL_COLOURS[model])
        for i, row in part.iterrows():
            red = row["reduction"]
            txt = "empty" if row["n_records"] == 0 else (
                "—" if pd.isna(red) else f"{red:.0%} lower" if red >= 0
                else f"{-red:.0%} higher")
            top = np.nanmax([row["mean_unrestricted"], row["mean_restricted"], 0])
            ax.text(i, top + 0.02 * ylim, txt, ha="center", fontsize=8)
        ax.set_xticks(x, [f"{g}\n(n = {n})" for g, n in zip(part["group"], part["n_records"])],
                      fontsize=8)
        ax.set_ylim(0, ylim)
        ax.set_ylabel("mean share of implicates", fontsize=8)
        ax.set_title(f"risk: {measure}", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    return fig


def plot_risk_distribution(
    risk_by_model: Mapping[str, Mapping[str, np.ndarray]], at_risk: np.ndarray
) -> Figure:
    """Distribution of per-record risk: histograms of both models and a record-by-record scatter.

    Parameters
    ----------
    risk_by_model : dict of str to dict of str to ndarray of shape (n_records,)
        ``{measure: {"unrestricted": r, "restricted": r}}``, r in [0, 1].
    at_risk : ndarray of bool, shape (n_records,)
        At-risk records (highlighted in the scatter).

    Returns
    -------
    matplotlib.figure.Figure
    """
    measures = list(risk_by_model)
    risk = np.asarray(at_risk, bool)
    fig, axes = plt.subplots(len(measures), 2, figsize=(10, 3.6 * len(measures)),
                             squeeze=False, layout="constrained")
    bins = np.linspace(-0.025, 1.025, 22)  # centred on multiples of 0.05 (L = 20, 100, ...)
    for row, measure in zip(axes, measures, strict=True):
        r = risk_by_model[measure]
        for model in ("unrestricted", "restricted"):
            row[0].hist(r[model], bins=bins, histtype="step", lw=1.8,
                        color=MODEL_COLOURS[model], label=model)
        row[0].set_xlabel(f"per-record risk ({measure})", fontsize=8)
        row[0].set_ylabel("records", fontsize=8)
        row[0].legend(fontsize=8)
        row[0].set_title(f"distribution of per-record risk, {measure}", fontsize=9)
        u, s = np.asarray(r["unrestricted"]), np.asarray(r["restricted"])
        row[1].plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        row[1].scatter(u[~risk], s[~risk], s=12, c="#555555", alpha=0.5, label="other")
        row[1].scatter(u[risk], s[risk], s=40, marker="^", c=_AT_RISK, label="at risk")
        row[1].set_xlim(-0.03, 1.03)
        row[1].set_ylim(-0.03, 1.03)
        row[1].set_aspect("equal")
        row[1].set_xlabel("unrestricted", fontsize=8)
        row[1].set_ylabel("restricted", fontsize=8)
        row[1].set_title(f"record by record, {measure} (below the line = lower)", fontsize=9)
        row[1].legend(fontsize=8, loc="upper left")
    return fig


def plot_reiter_intervals(utility: pd.DataFrame) -> Figure:
    """Reiter (2003) intervals of each model against the confidential OLS interval, per term.

    Parameters
    ----------
    utility : pandas.DataFrame
        :func:`synthgeo.utility.reiter.compare_to_confidential` output (columns ``model``, ``term``,
        ``estimate``, ``lower``, ``upper``, ``ci_overlap``), ``"confidential"`` among the
        models.

    Returns
    -------
    matplotlib.figure.Figure
    """
    terms = list(dict.fromkeys(utility["term"]))
    models = list(dict.fromkeys(utility["model"]))
    fig, axes = plt.subplots(len(terms), 1, figsize=(8, 0.55 * len(models) * len(terms) + 1.2),
                             squeeze=False, layout="constrained")
    for ax, term in zip(axes[:, 0], terms, strict=True):
        part = utility[utility["term"] == term].set_index("model")
        conf = part.loc["confidential"]
        ax.axvspan(conf["lower"], conf["upper"], color="#dddddd", zorder=0)
        for y, model in enumerate(models):
            row = part.loc[model]
            c = MODEL_COLOURS.get(model, "C0")
            ax.plot([row["lower"], row["upper"]], [y, y], color=c, lw=3)
            ax.plot([row["estimate"]], [y], "o", color="white", mec=c, mew=2)
            if model != "confidential" and pd.notna(row["ci_overlap"]):
                ax.text(1.01, y, f"overlap {row['ci_overlap']:.2f}", va="center", fontsize=8,
                        transform=ax.get_yaxis_transform())
        ax.set_yticks(range(len(models)), models, fontsize=8)
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.invert_yaxis()
        ax.set_title(term, fontsize=9, loc="left")
        ax.tick_params(axis="x", labelsize=8)
    return fig


def plot_rank(idata_by_model: Mapping[str, object], var_names: Sequence[str]) -> Figure:
    """ArviZ rank plots (Vehtari et al. 2021), one row per model, one column per parameter.

    Parameters
    ----------
    idata_by_model : dict of str to arviz.InferenceData
        Each with a ``posterior`` group holding ``var_names`` (chain, draw).
    var_names : sequence of str
        Scalar parameters to plot.

    Returns
    -------
    matplotlib.figure.Figure
        Uniform bars in every chain mean the chains mix; ArviZ draws the reference line.
    """
    import arviz as az

    models = list(idata_by_model)
    fig, axes = plt.subplots(len(models), len(var_names),
                             figsize=(3.4 * len(var_names), 2.6 * len(models)), squeeze=False,
                             layout="constrained")
    for row, model in zip(axes, models, strict=True):
        idata = idata_by_model[model]
        for ax, var in zip(row, var_names, strict=True):
            az.plot_rank(idata, var_names=[var], ax=ax)
            ax.set_title(f"{model}: {var}", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.xaxis.label.set_size(8)
            ax.yaxis.label.set_size(8)
    return fig


def plot_spatial_k_histogram(spatial_k: np.ndarray, *, k: int | None = None,
                             radius_m: float | None = None, k_max: int | None = None) -> Figure:
    """Histogram of per-record spatial k (records within ``radius_m``, itself included).

    Parameters
    ----------
    spatial_k : ndarray of int, shape (n_records,)
        Count per record, >= 1.
    k : int, optional
        Threshold; bars below it are drawn in red and the line marks it.
    radius_m : float, optional
        Radius in metres (title).
    k_max : int, optional
        Cap of the counts: the last bar is "≥ k_max".

    Returns
    -------
    matplotlib.figure.Figure
    """
    sk = np.asarray(spatial_k, dtype=int)
    top = int(sk.max()) if sk.size else 1
    values = np.arange(1, top + 1)
    counts = np.bincount(sk, minlength=top + 1)[1:]
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    colours = [_AT_RISK if (k is not None and v < k) else "#4c72b0" for v in values]
    ax.bar(values, counts, color=colours, width=0.9)
    if k is not None:
        ax.axvline(k - 0.5, color="black", ls="--", lw=1, label=f"k = {k}")
        ax.legend(fontsize=8)
    ax.set_xlabel("spatial k (records within radius, itself included)"
                  + (f"; last bar ≥ {k_max}" if k_max else ""), fontsize=8)
    ax.set_ylabel("records", fontsize=8)
    ax.set_title("spatial k" + (f" within {radius_m:,.0f} m" if radius_m else ""), fontsize=10)
    return fig
