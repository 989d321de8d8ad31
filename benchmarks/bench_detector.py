"""Can a protected record be told apart? The detector's controls on a real file (issue 25, item 4).

One release spec (default ``models/sacramento_all.toml``: 932 real Sacramento sales, exact GP,
grid sampler, L = 100), fitted once unrestricted; then, with the detector of
:mod:`synthgeo.risk.detector` (release-visible features, cross-fitted Logit, fold-averaged AUC
with its interval; docs/risk-and-utility.md, "Can a protected record be told apart?"):

- ``positive (random sites)``: γ = ∞ (the restricted model, ``restricted_smoothing`` with the
  binary at-risk weights) at ``--n-protected`` sites drawn at random (seed 2025), refitted;
  the detector must catch it (AUC ≥ 0.9);
- ``positive (isolated sites)``: γ = ∞ at the most isolated sites (largest distance to the
  k-th other site: what a spatial at-risk rule picks), with every feature and without the
  isolation feature (treatment vs selection);
- ``negative (random labels)``: as many records labelled at random (seed 2026) in the
  unrestricted release: the interval should cover 0.5;
- ``null calibration``: ``--null-labellings`` further random labellings (seeds 3000, 3001, ...)
  of the unrestricted release, each with 20 permutations: the mean and SD of the AUC, the mean
  DeLong SE, and how often the DeLong-only interval and the reported one (SE = max(DeLong,
  permutation SD)) cover 0.5;
- ``cross-fit (random sites)``: the records of the random sites drawn from their
  leave-site-out predictive (:mod:`synthgeo.synthesis.cross_fit`), the rest from the
  unrestricted posterior predictive — only where that module has landed (the crossfit
  branch), otherwise skipped with a message.

Prints AUC, interval, permutation SD and p-value per case; writes a record via
benchmarks/_record.py. Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_detector.py [--spec models/sacramento_all.toml]
        [--n-protected 120] [--permutations 100] [--null-labellings 40]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402

from synthgeo.config import load_spec  # noqa: E402
from synthgeo.io.crs import coordinates_m  # noqa: E402
from synthgeo.model.at_risk import AtRiskResult  # noqa: E402
from synthgeo.pipeline.data import prepare_data  # noqa: E402
from synthgeo.pipeline.run import make_fitter, restricted_smoothing  # noqa: E402
from synthgeo.risk.detector import FEATURES, detect_protected  # noqa: E402
from synthgeo.synthesis.implicates import draw_implicates  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEED_SITES, SEED_LABELS, SEED_DETECTOR = 2025, 2026, 2025


def _restricted(spec, data, fit, fu, flag, seed):
    """γ = ∞ at the flagged sites: the restricted fit and its implicates (model scale)."""
    coords = coordinates_m(data.gdf)
    at_risk = AtRiskResult(radius_m=0.0, k=spec.model.k,
                           n_neighbours=np.zeros(data.n_records, int),
                           at_risk=flag[data.sites.site_index], site_at_risk=flag)
    smoothing = restricted_smoothing(spec, coords, data.sites, at_risk,
                                     float(fu.phi_quantiles((0.5,))[0]))
    fr = fit(scale=smoothing, random_seed=seed, label="restricted")
    return draw_implicates(fr, data.X, n_implicates=spec.synthesis.n_implicates,
                           random_seed=seed + 1)["y_synthetic"].values


def _cross_fit(spec, data, fu, ds_u, records, seed):
    """Return the unrestricted release with ``records`` drawn from their leave-out predictive."""
    try:
        from synthgeo.synthesis.cross_fit import draw_cross_fitted, implicate_sources
    except ImportError:
        return None
    from synthgeo.pipeline.risk_stage import loo_predictive

    sources = implicate_sources(fu, spec.synthesis.n_implicates)
    loo = loo_predictive(spec, data, fu, ds_u)
    cf = draw_cross_fitted(loo.mean, loo.sd, sources=sources, random_seed=seed)
    Y = ds_u["y_synthetic"].values.copy()
    Y[:, records] = cf["y_synthetic"].values[:, records]
    return Y


def main(argv: list[str] | None = None) -> None:
    """Run the controls and print the detector's figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "models" / "sacramento_all.toml"))
    ap.add_argument("--n-protected", type=int, default=120, help="protected sites")
    ap.add_argument("--permutations", type=int, default=100)
    ap.add_argument("--null-labellings", type=int, default=40)
    args = ap.parse_args(argv)
    rec = Record.start("bench_detector", Path(args.spec).stem, argv)

    spec = load_spec(args.spec)
    spec = spec.replace("model", gamma="inf", at_risk_weight="binary", at_risk_effect="zero")
    data = prepare_data(spec)
    coords = coordinates_m(data.gdf)
    X_released = data.X[:, 1:]  # the released covariates (the intercept is no column)
    seed = int(spec.sampling.seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fit = make_fitter(spec, data)
        fu = fit(random_seed=seed, label="unrestricted")
        ds_u = draw_implicates(fu, data.X, n_implicates=spec.synthesis.n_implicates,
                               random_seed=seed + 2)
        n_sites = data.sites.n_sites
        random_sites = np.zeros(n_sites, bool)
        random_sites[np.random.default_rng(SEED_SITES).choice(n_sites, args.n_protected,
                                                              replace=False)] = True
        site_xy = data.sites.coords_m
        kth = cKDTree(site_xy).query(site_xy, k=spec.model.k + 1)[0][:, -1]
        isolated_sites = np.zeros(n_sites, bool)
        isolated_sites[np.argsort(-kth, kind="stable")[:args.n_protected]] = True
        Y_random = _restricted(spec, data, fit, fu, random_sites, seed + 10)
        Y_isolated = _restricted(spec, data, fit, fu, isolated_sites, seed + 20)
    fit_s = time.perf_counter() - t0
    lab_random = random_sites[data.sites.site_index]
    lab_isolated = isolated_sites[data.sites.site_index]
    lab_null = np.zeros(data.n_records, bool)
    lab_null[np.random.default_rng(SEED_LABELS).choice(data.n_records, int(lab_random.sum()),
                                                       replace=False)] = True
    no_iso = tuple(f for f in FEATURES if f != "log_isolation")
    cases = [
        ("positive_random", "γ = ∞ at random sites", Y_random, lab_random, None),
        ("positive_isolated", "γ = ∞ at isolated sites", Y_isolated, lab_isolated, None),
        ("positive_isolated_no_isolation", "  the same, without log_isolation", Y_isolated,
         lab_isolated, no_iso),
        ("negative", "random labels, unrestricted", ds_u["y_synthetic"].values, lab_null, None),
    ]
    Y_cf = _cross_fit(spec, data, fu, ds_u, lab_random, seed + 30)
    if Y_cf is None:
        print("cross-fit case skipped: synthgeo.synthesis.cross_fit is not on this checkout "
              "(the crossfit branch has not landed on main)")
    else:
        cases.append(("cross_fit_random", "leave-out predictive at random sites", Y_cf,
                      lab_random, None))

    print(f"{Path(args.spec).name}: {data.n_records} records, {n_sites} sites, "
          f"L = {spec.synthesis.n_implicates}; fits and implicates {fit_s:.0f} s; "
          f"{args.permutations} permutations per case")
    print(f"{'case':40s} {'prot':>5s} {'other':>6s} {'AUC':>6s} {'95% CI':>15s} "
          f"{'null sd':>8s} {'p':>6s}")
    detail = {"n_records": data.n_records, "n_sites": n_sites,
              "n_implicates": spec.synthesis.n_implicates, "fit_seconds": fit_s, "cases": {}}
    for key, label, Y, lab, feats in cases:
        t = time.perf_counter()
        res = detect_protected(Y, X_released, coords, lab, seed=SEED_DETECTOR,
                               features=feats, n_permutations=args.permutations)
        secs = time.perf_counter() - t
        print(f"{label:40s} {res.n_protected:5d} {res.n_other:6d} {res.auc:6.3f} "
              f"({res.ci[0]:.3f}, {res.ci[1]:.3f}) {res.null_sd or float('nan'):8.3f} "
              f"{res.p_value or float('nan'):6.3f}   [{secs:.1f} s]")
        top = sorted(res.coefficients.items(), key=lambda kv: -abs(kv[1]))[:3]
        print(" " * 42 + "leans on: " + ", ".join(f"{k} {v:+.2f}" for k, v in top))
        detail["cases"][key] = {**res.to_dict(), "seconds": secs}
        rec.figure(f"auc_{key}", round(res.auc, 4), "AUC")
        rec.figure(f"auc_upper_{key}", round(res.ci[1], 4), "AUC")
    if args.null_labellings:
        _null_calibration(ds_u["y_synthetic"].values, X_released, coords,
                          int(lab_random.sum()), args.null_labellings, rec, detail)
    rec.finish(detail)


def _null_calibration(Y, X, coords, n_labelled, n_labellings, rec, detail) -> None:
    """Random labellings of the unrestricted release: the AUC's spread and the coverage of 0.5."""
    t = time.perf_counter()
    aucs, se_d, cover_d, cover = [], [], 0, 0
    for i in range(n_labellings):
        lab = np.zeros(Y.shape[1], bool)
        lab[np.random.default_rng(3000 + i).choice(Y.shape[1], n_labelled, replace=False)] = True
        res = detect_protected(Y, X, coords, lab, seed=SEED_DETECTOR, n_permutations=20)
        aucs.append(res.auc)
        se_d.append(res.se_delong)
        cover_d += abs(res.auc - 0.5) <= 1.959964 * res.se_delong
        cover += res.ci[0] <= 0.5 <= res.ci[1]
    out = {"n_labellings": n_labellings, "mean_auc": float(np.mean(aucs)),
           "sd_auc": float(np.std(aucs, ddof=1)), "mean_se_delong": float(np.mean(se_d)),
           "coverage_delong": cover_d / n_labellings, "coverage_reported": cover / n_labellings}
    print(f"null calibration, {n_labellings} random labellings of {n_labelled} records "
          f"(20 permutations each): AUC mean {out['mean_auc']:.3f}, SD {out['sd_auc']:.3f}; "
          f"mean DeLong SE {out['mean_se_delong']:.3f}; 0.5 covered by the DeLong interval "
          f"{out['coverage_delong']:.0%}, by the reported one {out['coverage_reported']:.0%} "
          f"[{time.perf_counter() - t:.0f} s]")
    detail["null_calibration"] = out
    for key in ("mean_auc", "sd_auc", "mean_se_delong", "coverage_delong",
                "coverage_reported"):
        rec.figure(f"null_{key}", round(out[key], 4), "AUC" if "cov" not in key else "share")


if __name__ == "__main__":
    main()
