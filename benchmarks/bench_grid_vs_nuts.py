"""NUTS with the grid's priors vs the grid route on the bundled example: posterior means.

Both routes get the same (data-scaled) priors in the grid's conjugate form
(``build_model(prior_form="conjugate")``: β | σ² ~ N(μ, σ² v I), nugget share uniform, range
uniform, σ² inverse gamma). For the unrestricted model and the restricted one (D from the grid
fit's at-risk set) the posterior means of σ², τ², range, nugget share and β are compared in
NUTS posterior standard deviations (target: within 0.1 sd), with the Monte Carlo standard
error of the difference beside them.

Usage: python benchmarks/bench_grid_vs_nuts.py [--chains 4 --draws 2000 --tune 1000]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np

from synthgeo.config import SamplingConfig, bundled_spec_path, load_spec
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.inference.nuts import fit_gp
from synthgeo.model.at_risk import find_at_risk
from synthgeo.model.kernels import M_FROM_RHO0
from synthgeo.model.restricted_gp import default_priors


def _summ(fit):
    """Mean, sd and ESS per parameter; for grid fits the ESS of functions of (range, nugget
    share) is at most the importance ESS of the distinct points they were drawn at."""
    post = fit.idata.posterior
    post = post.assign(nugget_share=post["nugget"] / (post["sigma2"] + post["nugget"]),
                       beta0=post["beta"].isel(coef=0), beta1=post["beta"].isel(coef=1))
    names = ["sigma2", "nugget", "range", "nugget_share", "beta0", "beta1"]
    ess = {k: float(v) for k, v in az.ess(post[names]).items()}
    cap = fit.engine.get("importance_ess")
    if cap is not None:
        ess.update({k: min(ess[k], cap) for k in ("range", "nugget_share")})
    return {k: (float(post[k].mean()), float(post[k].std()), ess[k]) for k in names}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--tune", type=int, default=1000)
    args = ap.parse_args()
    logging.getLogger("synthgeo").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    from synthgeo.pipeline import prepare_data

    spec = load_spec(bundled_spec_path())
    data = prepare_data(spec)
    priors = default_priors(data.y, data.X, data.sites)
    common = dict(priors=priors, coef_names=data.coef_names)
    nuts_cfg = SamplingConfig(sampler="nutpie", chains=args.chains, draws=args.draws,
                             tune=args.tune, seed=11)
    grid_cfg = SamplingConfig(chains=2, draws=2000, seed=11)
    coords = data.sites.coords_m[data.sites.site_index]
    scale = None
    worst = 0.0
    for label in ("unrestricted", "restricted"):
        t = time.perf_counter()
        g = fit_gp_grid(data.y, data.X, data.sites, scale=scale, gp="exact", config=grid_cfg,
                        **common)
        t_grid = time.perf_counter() - t
        t = time.perf_counter()
        n = fit_gp(data.y, data.X, data.sites, scale=scale, config=nuts_cfg,
                   prior_form="conjugate", **common)
        t_nuts = time.perf_counter() - t
        sg, sn = _summ(g), _summ(n)
        print(f"\n{label}: grid {t_grid:.1f} s ({g.engine['grid_evaluations']} cells), NUTS "
              f"{t_nuts:.1f} s ({args.chains} x ({args.tune} + {args.draws}); max R-hat "
              f"{n.convergence.max_r_hat:.3f}, divergences {n.convergence.n_divergent})")
        print(f"  {'parameter':<14}{'mean grid':>12}{'mean NUTS':>12}{'sd NUTS':>11}"
              f"{'diff/sd':>9}{'MC se/sd':>10}")
        for k in sg:
            mg, sdg, essg = sg[k]
            mn, sdn, essn = sn[k]
            diff = (mg - mn) / sdn
            se = np.sqrt(sdg**2 / essg + sdn**2 / essn) / sdn
            worst = max(worst, abs(diff))
            print(f"  {k:<14}{mg:>12.5g}{mn:>12.5g}{sdn:>11.4g}{diff:>9.3f}{se:>10.3f}")
        if scale is None:  # the restricted model: D from the grid fit's at-risk set
            M = float(M_FROM_RHO0(g.phi_quantiles((0.5,))[0], spec.model.rho0))
            risk = find_at_risk(coords, data.sites.site_index, M, k=spec.model.k)
            scale = np.where(risk.site_at_risk, 0.0, 1.0)
            print(f"  (restricted: M = {M:,.0f} m, {risk.n_at_risk} at-risk records)")
    print(f"\nlargest |mean difference| {worst:.3f} NUTS posterior sd (target <= 0.1): "
          f"{'PASS' if worst <= 0.1 else 'FAIL'}")


if __name__ == "__main__":
    main()
