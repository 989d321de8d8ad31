"""Benchmarks of the bernoulli / poisson inference (issue 15): timing, accuracy, alternatives.

Usage (SYNTHGEO_SHARED_DATA defaults to /work/shared/data; run with OPENBLAS_NUM_THREADS=1 on a
shared machine, the sparse factorisations are single-threaded anyway)::

    python benchmarks/bench_families.py minneapolis [--implicates 100]
    python benchmarks/bench_families.py lucas
    python benchmarks/bench_families.py accuracy
    python benchmarks/bench_families.py dispersion
    python benchmarks/bench_families.py pg
    python benchmarks/bench_families.py factor

Each prints its figures; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(os.environ.get("SYNTHGEO_SHARED_DATA", "/work/shared/data"))


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def _range_bounds(sites):
    from scipy.spatial import ConvexHull

    nn = sites.nearest_site_distance_m()
    hull = sites.coords_m[ConvexHull(sites.coords_m).vertices]
    far = np.sqrt(((hull[:, None, :] - hull[None, :, :]) ** 2).sum(-1)).max()
    return float(np.median(nn[np.isfinite(nn)])), float(far)


def minneapolis(args) -> None:
    """Minneapolis: personSearch yes/no at the stop locations, string covariates."""
    import synthgeo as sg
    from synthgeo.inference.glmm import fit_glmm
    from synthgeo.io.points import coordinates_m
    from synthgeo.model.families import Bernoulli
    from synthgeo.model.glmm_priors import GLMMPriors
    from synthgeo.model.kernels import make_sites

    t0 = time.perf_counter()
    gdf = sg.read_points(DATA / "minneapolis_police_stops_2017.csv", x="lon", y="lat",
                         crs="EPSG:4326", id="idNum", drop_duplicates=False)
    gdf = gdf[gdf["personSearch"].notna() & gdf["gender"].notna()].reset_index(drop=True)
    y = (gdf["personSearch"] == "YES").to_numpy(float)
    cov = pd.get_dummies(gdf[["problem", "race", "gender"]], drop_first=True, dtype=float)
    X = np.column_stack([np.ones(len(gdf)), cov.to_numpy()])
    sites = make_sites(coordinates_m(gdf))
    lo, hi = _range_bounds(sites)
    t_load = time.perf_counter() - t0
    print(f"records {len(gdf)}, sites {sites.n_sites}, p = {X.shape[1]}, yes share "
          f"{y.mean():.3f}, range prior [{lo:.0f}, {hi:.0f}] m; load {t_load:.1f} s")
    t0, c0 = time.perf_counter(), time.process_time()
    fit = fit_glmm(y, X, sites, family=Bernoulli(), coef_names=["(Intercept)"] + list(cov),
                   priors=GLMMPriors(range_min_m=lo, range_max_m=hi),
                   covariance="nngp", n_neighbors=args.neighbors)
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    g = fit.grid
    print(f"fit {t_fit:.1f} s wall, {c_fit:.1f} s CPU: {g.n_evaluations} log-density "
          f"evaluations, {fit.model.n_factorisations} factorisations, "
          f"{fit.model.n_pcg_iterations} PCG iterations "
          f"({t_fit / max(1, fit.model.n_factorisations):.2f} s each incl. Newton overhead), "
          f"{g.points.shape[0]} grid points, problems {g.problems}")
    print(f"  stages: {g.stages}")
    t0 = time.perf_counter()
    s = fit.summary()
    print(f"summary {time.perf_counter() - t0:.1f} s")
    for k in ("range_m", "sigma2"):
        print(f"  {k}: 2.5/50/97.5 % = {np.round(s[k], 3)}")
    for k, (m, sd) in s["beta"].items():
        print(f"  {k}: {m:.3f} ({sd:.3f})")
    t0, c0 = time.perf_counter(), time.process_time()
    f0 = fit.model.n_factorisations
    ys = fit.synthesize(args.implicates, seed=1)
    t_syn = time.perf_counter() - t0
    print(f"synthesis L = {args.implicates}: {t_syn:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU "
          f"({fit.model.n_factorisations - f0} factorisations); synthetic yes share "
          f"{ys.mean():.3f} vs {y.mean():.3f}; peak RSS {_peak_gb():.2f} GB")


def lucas(args) -> None:
    """Gaussian second response: log assessed value given log price (existing grid route)."""
    from synthgeo.inference.grid import fit_gp_grid
    from synthgeo.model.kernels import make_sites
    from synthgeo.model.restricted_gp import GPPriors

    df = pd.read_csv(DATA / "lucas_oh_house_sales.csv")
    y = np.log(df["avalue"].to_numpy(float))
    X = np.column_stack([np.ones(len(df)), df["log_price"].to_numpy(float)])
    sites = make_sites(df[["x_m", "y_m"]].to_numpy(float))
    lo, hi = _range_bounds(sites)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    s2 = float(np.var(y - X @ beta))
    pri = GPPriors(sigma2_scale=s2, nugget_sd_scale=np.sqrt(s2), range_min_m=lo,
                   range_max_m=hi)
    t0, c0 = time.perf_counter(), time.process_time()
    fit = fit_gp_grid(y, X, sites, priors=pri, coef_names=["(Intercept)", "log_price"],
                      gp="nngp")
    print(f"Lucas log(avalue) | log_price, N = {len(df)}: fit {time.perf_counter() - t0:.1f} s "
          f"wall, {time.process_time() - c0:.1f} s CPU, peak RSS {_peak_gb():.2f} GB")
    post = fit.idata.posterior
    for v in ("sigma2", "nugget", "range"):
        print(f"  {v}: mean {float(post[v].mean()):.4g}, 2.5/97.5 % "
              f"{np.round(post[v].quantile([0.025, 0.975]).values, 4)}")
    print(f"  beta: {np.round(post['beta'].mean(('chain', 'draw')).values, 4)}")
    t0, c0 = time.perf_counter(), time.process_time()
    fit.effects(np.arange(args.implicates))
    print(f"  effects for L = {args.implicates} draws: {time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s CPU; peak RSS {_peak_gb():.2f} GB")


def _tiny(family: str, seed: int):
    from synthgeo.studies.glmm_simulation import simulate_glmm

    d = simulate_glmm(family, n_sites=30, records_per_site=1, beta=(-0.5, 0.5) if
                      family == "bernoulli" else (0.5, 0.3), sigma2=1.0, range_m=3000.0,
                      extent_m=6000.0, seed=seed)
    return d


def accuracy(args) -> None:
    """Nested Laplace vs an importance-sampling brute force on N = 30 records (exact GP)."""
    from synthgeo.inference.glmm import fit_glmm
    from synthgeo.inference.laplace import LaplaceGLMM
    from synthgeo.inference.quadrature import ThetaGridSettings
    from synthgeo.model.families import get_family
    from synthgeo.model.glmm_priors import GLMMPriors
    from synthgeo.model.kernels import make_sites
    from synthgeo.studies.glmm_reference import reference_posterior, weighted_quantiles

    pri = GLMMPriors(range_min_m=100.0, range_max_m=8000.0)
    qs = [0.025, 0.5, 0.975]
    for family in ("bernoulli", "poisson"):
        for seed in (1, 2):
            d = _tiny(family, seed)
            sites = make_sites(d["coords_m"])
            expo = d["exposure"] if family == "poisson" else None
            model = LaplaceGLMM(d["y"], d["X"], sites, family=get_family(family), priors=pri,
                                exposure=expo, covariance="exact")
            t_ax, v_ax = np.linspace(-6, 6, args.nodes), np.linspace(-10, 3, args.nodes)
            t0 = time.perf_counter()
            ref = reference_posterior(model, [t_ax, v_ax], n_draws=args.is_draws, seed=seed)
            t_ref = time.perf_counter() - t0
            for step in (1.0, 0.75):
                t0 = time.perf_counter()
                fit = fit_glmm(d["y"], d["X"], sites, family=get_family(family), priors=pri,
                               exposure=expo, covariance="exact",
                               settings=ThetaGridSettings(step=step))
                t_fit = time.perf_counter() - t0
                gq = fit.grid.quantiles(qs, n_draws=100_000)
                line = [f"{family} seed {seed} δz={step}: fit {t_fit:.1f} s "
                        f"({fit.grid.n_evaluations} evals) vs reference {t_ref:.0f} s "
                        f"(min ESS {ref['min_ess']:.0f}, max se {ref['max_se']:.3f})"]
                for ax, (name, spacing, to_nat) in enumerate([
                        ("range_m", t_ax[1] - t_ax[0], pri.range_m),
                        ("sigma2", v_ax[1] - v_ax[0], np.exp)]):
                    vals = ref["points"][:, ax]
                    rq = to_nat(weighted_quantiles(vals, ref["weights"], qs, spacing))
                    lq = to_nat(weighted_quantiles(vals, ref["weights_laplace"], qs, spacing))
                    fq = to_nat(gq[:, ax])
                    nat = to_nat(vals)
                    m = ref["weights"] @ nat
                    sd = np.sqrt(ref["weights"] @ (nat - m) ** 2)
                    line.append(f"  {name}: 2.5/50/97.5 % ref {np.round(rq, 3)}, Laplace on "
                                f"the ref grid {np.round(lq, 3)}, fit {np.round(fq, 3)}; "
                                f"max |Laplace − ref| {np.max(np.abs(lq - rq)) / sd:.2f} sd, "
                                f"max |fit − ref| {np.max(np.abs(fq - rq)) / sd:.2f} sd")
                bm = fit.summary()["beta"]
                line.append(f"  beta mean: ref {np.round(ref['beta_mean'], 3)}, fit "
                            f"{np.round([v[0] for v in bm.values()], 3)} (sd "
                            f"{np.round([v[1] for v in bm.values()], 3)})")
                print("\n".join(line), flush=True)


def _pg_gibbs(model, n_iter: int, seed: int, step0=(0.5, 0.3)):
    """Pólya-Gamma Gibbs (Polson, Scott & Windle 2013) for the logit model, RW-MH on θ | x."""
    import scipy.sparse as sp
    from polyagamma import random_polyagamma

    from synthgeo.inference.factor import SPDFactor

    rng = np.random.default_rng(seed)
    J = model._design(np.ones(model.sites.n_sites))
    kappa = model.y - 0.5
    theta = np.zeros(2)
    n, p = model.n_active, model.X.shape[1]

    def prior_at(th):
        phi_km, s2, _ = model._split(th)
        Q, logdet, sqrt_apply, mu = model._prior(phi_km, s2)
        return Q, logdet, sqrt_apply, mu

    def log_cond(th, x, pr):  # log p(x | θ) + log p(θ)
        Q, logdet, _, mu = pr
        r = x - mu
        return 0.5 * logdet - 0.5 * r @ (Q @ r) + model.priors.log_density(th[None])[0]

    pr = prior_at(theta)
    x = pr[3].copy()
    step = np.array(step0, float)
    out, acc = [], 0
    for it in range(n_iter):
        eta = J @ x
        omega = random_polyagamma(1.0, eta, random_state=rng)
        Q, _, sqrt_apply, mu = pr
        Qpost = Q + J.T @ sp.diags(omega) @ J
        fac = SPDFactor(Qpost.tocsc())
        b = (J.T @ kappa + Q @ mu + sqrt_apply(rng.standard_normal((n + p, 1)))[:, 0]
             + J.T @ (np.sqrt(omega) * rng.standard_normal(omega.size)))
        x = fac.solve(b)
        for _ in range(2):  # two MH moves on θ per sweep
            prop = theta + step * rng.standard_normal(2)
            pr_new = prior_at(prop)
            if np.log(rng.random()) < log_cond(prop, x, pr_new) - log_cond(theta, x, pr):
                theta, pr = prop, pr_new
                acc += 1
        out.append(np.concatenate([theta, x[n:]]))
    return np.array(out), acc / (2 * n_iter)


def pg(args) -> None:
    """Pólya-Gamma Gibbs vs nested Laplace on a mid-size bernoulli problem (NNGP)."""
    import arviz as az

    from synthgeo.inference.glmm import fit_glmm
    from synthgeo.inference.laplace import LaplaceGLMM
    from synthgeo.model.families import Bernoulli
    from synthgeo.model.glmm_priors import GLMMPriors
    from synthgeo.model.kernels import make_sites
    from synthgeo.studies.glmm_simulation import simulate_glmm

    pri = GLMMPriors(range_min_m=100.0, range_max_m=20_000.0)
    d = simulate_glmm("bernoulli", n_sites=args.sites, records_per_site=3, sigma2=1.0,
                      range_m=3000.0, seed=3)
    sites = make_sites(d["coords_m"])
    t0 = time.perf_counter()
    fit = fit_glmm(d["y"], d["X"], sites, family=Bernoulli(), priors=pri, covariance="nngp")
    t_fit = time.perf_counter() - t0
    s = fit.summary()
    qs = [0.025, 0.5, 0.975]
    chains = []
    t0 = time.perf_counter()
    for c in range(2):
        model = LaplaceGLMM(d["y"], d["X"], sites, family=Bernoulli(), priors=pri,
                            covariance="nngp")
        draws, acc = _pg_gibbs(model, args.iterations, seed=10 + c)
        chains.append(draws[args.iterations // 4:])
    t_pg = time.perf_counter() - t0
    ch = np.array(chains)  # (chain, draw, 2 + p)
    ess = az.ess(az.convert_to_dataset({"t": ch[:, :, 0], "v": ch[:, :, 1],
                                        "b0": ch[:, :, 2]}))
    rhat = az.rhat(az.convert_to_dataset({"t": ch[:, :, 0], "v": ch[:, :, 1]}))
    flat = ch.reshape(-1, ch.shape[-1])
    print(f"S = {args.sites} sites x 3 records: nested Laplace {t_fit:.1f} s "
          f"({fit.model.n_factorisations} factorisations); PG Gibbs 2 x {args.iterations} "
          f"iterations {t_pg:.1f} s, MH acceptance {acc:.2f}, ESS range "
          f"{float(ess['t']):.0f}, sigma2 {float(ess['v']):.0f}, b0 {float(ess['b0']):.0f}; "
          f"R-hat {float(rhat['t']):.3f}/{float(rhat['v']):.3f}")
    print(f"  ESS/s PG: {min(float(ess['t']), float(ess['v'])) / t_pg:.2f}")
    rng_pg = pri.range_m(flat[:, 0])
    for name, lap, pgv in [("range_m", s["range_m"], np.quantile(rng_pg, qs)),
                           ("sigma2", s["sigma2"], np.quantile(np.exp(flat[:, 1]), qs))]:
        sd = np.std(rng_pg if name == "range_m" else np.exp(flat[:, 1]))
        print(f"  {name}: Laplace {np.round(lap, 3)} PG {np.round(pgv, 3)}; max diff "
              f"{np.max(np.abs(np.asarray(lap) - pgv)) / sd:.2f} sd")
    for j, (k, (m, sd)) in enumerate(s["beta"].items()):
        print(f"  {k}: Laplace {m:.3f} ({sd:.3f}) PG {flat[:, 2 + j].mean():.3f} "
              f"({flat[:, 2 + j].std():.3f})")


def _pp_dispersion(y, X, n_rep: int = 200, seed: int = 0):
    """Pearson dispersion of a Poisson GLM fit vs its posterior predictive replicates."""
    import statsmodels.api as sm

    res = sm.GLM(y, X, family=sm.families.Poisson()).fit()
    rng = np.random.default_rng(seed)
    n, p = X.shape

    def disp(yy, mu):
        return float(((yy - mu) ** 2 / mu).sum() / (n - p))

    obs = disp(y, res.mu)
    beta = rng.multivariate_normal(res.params, res.cov_params(), n_rep)
    reps = []
    for b in beta:
        mu = np.exp(X @ b)
        yr = rng.poisson(mu)
        reps.append(disp(yr, mu))
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return obs, lo, hi


def dispersion(args) -> None:
    """Check whether any real count in shared/data passes a predictive dispersion check.

    A Poisson model with a latent Gaussian field (spatial effect, overdispersion) can only
    *add* variance to the Poisson's, so a count whose Pearson dispersion lies below the
    non-spatial Poisson GLM's predictive interval fails for every model of this family.
    """
    lucas = pd.read_csv(DATA / "lucas_oh_house_sales.csv")
    sac = pd.read_csv(DATA / "sacramento_home_sales.csv")
    ones = np.ones(len(lucas))
    lx = np.column_stack([ones, np.log(lucas["TLA"]), lucas["age"]])
    sx = np.column_stack([np.ones(len(sac)), np.log(sac["sqft_living"])])
    cases = [("lucas beds", lucas["beds"], lx), ("lucas baths", lucas["baths"], lx),
             ("lucas halfbaths", lucas["halfbaths"], lx), ("lucas rooms", lucas["rooms"], lx),
             ("sacramento beds", sac["beds"], sx)]
    for name, y, X in cases:
        y = y.to_numpy(float)
        for label, XX in (("intercept", X[:, :1]), ("covariates", X)):
            obs, lo, hi = _pp_dispersion(y, XX)
            verdict = "PASS" if lo <= obs <= hi else "FAIL"
            print(f"{name:16s} mean {y.mean():6.3f} var {y.var():6.3f} | Poisson GLM "
                  f"({label}): Pearson dispersion {obs:.3f}, predictive 95% "
                  f"[{lo:.3f}, {hi:.3f}] -> {verdict}")


def factor(args) -> None:
    """One factorisation of an NNGP posterior precision with p dense coefficient columns."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    from synthgeo.model.vecchia import ordered_neighbours, vecchia_factors

    rng = np.random.default_rng(0)
    for S in (2000, 10_414, 25_000):
        xy = rng.uniform(0, 10, (S, 2))
        f = vecchia_factors(ordered_neighbours(xy, args.neighbors), 1.0, 0.0)
        Q = f.precision() + sp.diags(rng.uniform(0.1, 2, S))
        X = rng.standard_normal((S, 5)) * 0.1
        Qf = sp.bmat([[Q, sp.csr_matrix(X)], [sp.csr_matrix(X.T), sp.eye(5) * 1e4]]).tocsc()
        for spec in ("COLAMD", "MMD_AT_PLUS_A"):
            c0 = time.process_time()
            lu = splu(Qf, permc_spec=spec, diag_pivot_thresh=0.0,
                      options={"SymmetricMode": True})
            print(f"S = {S}, m = {args.neighbors}: SuperLU {spec} "
                  f"{time.process_time() - c0:.2f} s CPU, nnz(L+U) {lu.L.nnz + lu.U.nnz}")
        try:
            from sksparse.cholmod import cholesky
        except ImportError:
            print("  scikit-sparse not installed (CHOLMOD not measured)")
            continue
        c0 = time.process_time()
        cholesky(Qf)
        print(f"  CHOLMOD {time.process_time() - c0:.2f} s CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["minneapolis", "lucas", "accuracy", "dispersion", "pg",
                                     "factor"])
    ap.add_argument("--implicates", type=int, default=100)
    ap.add_argument("--neighbors", type=int, default=15)
    ap.add_argument("--nodes", type=int, default=41)
    ap.add_argument("--sites", type=int, default=400)
    ap.add_argument("--iterations", type=int, default=4000)
    ap.add_argument("--is-draws", type=int, default=4000)
    args = ap.parse_args()
    globals()[args.what](args)


if __name__ == "__main__":
    main()
