"""Risk–utility frontier over the smoothing strength γ and the at-risk threshold ρ₀.

docs/risk-and-utility.md (a frontier over γ and ρ₀, plotted, so that a board
can see the trade-off) and the issue's list γ ∈ {0, 1, max(0, σ²/τ² − 1), 10, ∞},
ρ₀ ∈ {0.05, 0.1, 0.2, 0.3}. The unrestricted model is fitted once; each (γ, ρ₀) setting gets
its own at-risk set (M = −log ρ₀/φ̂, so a fixed ``M_m`` in the spec is overridden by the sweep)
and its own restricted fit and implicates. Each row reports the at-risk count, the risk
reduction against the unrestricted model for at-risk and other records (ratio of means,
docs/risk-and-utility.md) and the mean CI overlap of the analyst's model over its terms.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from synthgeo._seed import resolve_seed
from synthgeo.config import ReleaseSpec
from synthgeo.io.points import coordinates_m
from synthgeo.model.at_risk import find_at_risk
from synthgeo.model.kernels import M_FROM_RHO0
from synthgeo.pipeline import make_fitter, prepare_data, restricted_smoothing
from synthgeo.risk.within_eps import _label, summarise_risk, within_eps_risk
from synthgeo.synthesis.implicates import draw_implicates
from synthgeo.utility.reiter import compare_to_confidential

__all__ = ["FrontierResult", "risk_utility_frontier", "DEFAULT_GAMMAS", "DEFAULT_RHO0S"]

log = logging.getLogger(__name__)

#: The issue's sweep: γ = 0 (unrestricted), 1, "auto" (max(0, σ²/τ² − 1) per draw), 10, ∞.
DEFAULT_GAMMAS: tuple = (0.0, 1.0, "auto", 10.0, "inf")
DEFAULT_RHO0S: tuple = (0.05, 0.1, 0.2, 0.3)


@dataclass(frozen=True, kw_only=True, eq=False)
class FrontierResult:
    """One row per (γ, ρ₀) setting.

    Attributes
    ----------
    table : pandas.DataFrame
        Columns ``gamma`` (str), ``rho0``, ``M_m`` (metres), ``n_at_risk``,
        ``reduction_at_risk``, ``reduction_other`` (relative measure, first ``p`` of the spec,
        e.g. within 10%), ``reduction_at_risk_abs``, ``reduction_other_abs`` (first ``eps``),
        ``mean_ci_overlap`` (over the analyst's terms), ``min_ci_overlap``, ``seconds``.
    measure_rel, measure_abs : str
        Labels of the two risk measures.
    seconds : dict
    """

    table: pd.DataFrame
    measure_rel: str
    measure_abs: str
    seconds: dict[str, float] = field(default_factory=dict)

    def plot(self, path: str | Path | None = None):
        """Plot risk reductions and CI overlap against γ, one line per ρ₀.

        Parameters
        ----------
        path : str or Path, optional
            Write a PNG there (atomically: temporary file, then rename).

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        t = self.table
        order = list(dict.fromkeys(t["gamma"]))
        fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
        panels = (("reduction_at_risk", f"risk reduction, at-risk records ({self.measure_rel})"),
                  ("reduction_other", f"risk reduction, other records ({self.measure_rel})"),
                  ("mean_ci_overlap", "mean CI overlap (analyst's model)"))
        for ax, (col, title) in zip(axes, panels):
            for rho0, g in t.groupby("rho0"):
                x = [order.index(v) for v in g["gamma"]]
                n = int(g["n_at_risk"].iloc[0])
                ax.plot(x, g[col], "o-", label=f"ρ₀ = {rho0} ({n} at risk)")
            ax.set_xticks(range(len(order)), [f"γ={v}" for v in order])
            ax.set_title(title, fontsize=10)
            if col != "mean_ci_overlap":
                ax.axhline(0, color="0.5", lw=0.8)
        axes[0].legend(fontsize=8)
        fig.suptitle("Risk–utility frontier (reduction = 1 − mean restricted risk / mean "
                     "unrestricted risk)", fontsize=11)
        if path is not None:
            path = Path(path)
            tmp = path.with_name(f".{path.name}.tmp")
            fig.savefig(tmp, format="png", dpi=110)
            tmp.replace(path)
            plt.close(fig)
        return fig


def risk_utility_frontier(
    spec: ReleaseSpec,
    *,
    gammas: tuple = DEFAULT_GAMMAS,
    rho0s: tuple = DEFAULT_RHO0S,
    progress=None,
) -> FrontierResult:
    """Sweep γ × ρ₀: one restricted fit per setting against one unrestricted fit.

    Parameters
    ----------
    spec : ReleaseSpec
        Data, sampler, risk and utility settings (the grid sampler keeps this to seconds per
        setting at N = 500). Its ``gamma``/``rho0``/``M_m`` are replaced by the sweep; its
        ``at_risk_weight`` applies except at γ = "inf", where binary weights are used (graded
        weights collapse to binary there); ``at_risk_effect`` applies at γ = "inf" only.
    gammas : tuple of float or {"auto", "inf"}
        Smoothing strengths.
    rho0s : tuple of float
        Correlation thresholds ρ₀ in (0, 1).
    progress : callable, optional
        ``progress(message)`` per setting.

    Returns
    -------
    FrontierResult

    Raises
    ------
    synthgeo.SpecError
        For a γ or ρ₀ the spec would refuse.
    """
    say = progress or (lambda msg: log.info(msg))
    t0 = time.perf_counter()
    data = prepare_data(spec)
    coords = coordinates_m(data.gdf)
    subject = data.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    ss = np.random.SeedSequence([resolve_seed(spec.sampling.seed), 7]).spawn(
        2 + 2 * len(gammas) * len(rho0s))
    seed = [int(s.generate_state(1)[0]) for s in ss]
    fit = make_fitter(spec, data)
    say("fitting the unrestricted model")
    unres = fit(random_seed=seed[0], label="unrestricted")
    L = spec.synthesis.n_implicates
    imp_u = draw_implicates(unres, data.X, n_implicates=L, record_id=data.record_id,
                            random_seed=seed[1])
    risk_u = within_eps_risk(imp_u["y_synthetic"], data.y, eps=spec.risk.eps, p=spec.risk.p,
                             transform=spec.data.back_transform)
    phi_hat = float(unres.phi_quantiles((0.5,))[0])
    m_rel, m_abs = _label("rel", spec.risk.p[0]), _label("abs", spec.risk.eps[0])
    rows, k = [], 2
    for rho0 in rho0s:
        M = float(M_FROM_RHO0(phi_hat, rho0))
        at_risk = find_at_risk(coords, data.sites.site_index, M, k=spec.model.k, subject=subject)
        for gamma in gammas:
            t = time.perf_counter()
            inf = gamma == "inf"
            s_v = spec.replace(
                "model", gamma=gamma, rho0=rho0, M_m=None,
                at_risk_weight="binary" if inf else spec.model.at_risk_weight,
                at_risk_effect=spec.model.at_risk_effect if inf else "zero",
            )
            sm = restricted_smoothing(s_v, coords, data.sites, at_risk, phi_hat, subject=subject)
            res = fit(scale=sm, random_seed=seed[k], label=f"gamma={gamma}, rho0={rho0}")
            imp = draw_implicates(res, data.X, n_implicates=L, record_id=data.record_id,
                                  random_seed=seed[k + 1],
                                  at_risk_effect=s_v.model.at_risk_effect)
            k += 2
            risk_r = within_eps_risk(imp["y_synthetic"], data.y, eps=spec.risk.eps,
                                     p=spec.risk.p, transform=spec.data.back_transform)
            summ = summarise_risk(risk_u, risk_r, np.asarray(at_risk.at_risk, bool))
            red = summ.set_index(["group", "measure"])["reduction"]
            util = compare_to_confidential(
                spec.formula, {"restricted": imp["y_synthetic"]}, data.frame,
                response=spec.data.response, truth=data.y, alpha=spec.utility.alpha,
            )
            ov = util.loc[util["model"] == "restricted", "ci_overlap"]
            rows.append({
                "gamma": str(gamma), "rho0": rho0, "M_m": M, "n_at_risk": at_risk.n_at_risk,
                "reduction_at_risk": red[("at_risk", m_rel)],
                "reduction_other": red[("other", m_rel)],
                "reduction_at_risk_abs": red[("at_risk", m_abs)],
                "reduction_other_abs": red[("other", m_abs)],
                "mean_ci_overlap": float(ov.mean()), "min_ci_overlap": float(ov.min()),
                "seconds": time.perf_counter() - t,
            })
            say(f"gamma={gamma}, rho0={rho0}: {at_risk.n_at_risk} at risk, reduction "
                f"{rows[-1]['reduction_at_risk']:.2f} / {rows[-1]['reduction_other']:.2f}, "
                f"CI overlap {rows[-1]['mean_ci_overlap']:.3f}")
    return FrontierResult(table=pd.DataFrame(rows), measure_rel=m_rel, measure_abs=m_abs,
                          seconds={"total": time.perf_counter() - t0})
