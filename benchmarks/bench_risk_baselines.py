"""Prototype of issue 11 items 1-2: release / baselines / attributable risk, and their cost.

Runs the pipeline on the grid route (``run_release``), then, outside it (the wiring comes
later), for both models: the release's predictive per implicate (β^(ℓ), d w^(ℓ), τ²^(ℓ) of the
draws that made the implicates), the leave-one-out baseline of the unrestricted fit at the same
draws (dense Cholesky for the exact GP, the NNGP precision above 1,000 records), the public
regression baseline on each model's implicates, the per-record scores and the attributable
summary by group (at-risk / other / all). Prints the figures and the seconds the baselines take
beside the seconds of the run (goal: ≤ 25 %).

Usage::

    python benchmarks/bench_risk_baselines.py bundled|paper|lucas [--n 2930] [--implicates L]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import MODELS, run_release
from synthgeo.risk.attributable import attributable_summary
from synthgeo.risk.baselines import baseline_public
from synthgeo.risk.loo import baseline_loo, exact_precision, loo_blocks, nngp_precision
from synthgeo.risk.measure import measures_from
from synthgeo.risk.predictive import release_predictive
from synthgeo.risk.records import score_records
from synthgeo.synthesis.implicates import implicate_draw_index

ROOT = Path(__file__).resolve().parents[1]


def _spec(which: str, n: int, tmp: Path):
    if which == "bundled":
        return load_spec(bundled_spec_path()).replace("sampling", sampler="grid")
    if which == "paper":
        return load_spec(ROOT / "models" / "paper_simulation.toml")
    spec = load_spec(ROOT / "models" / "lucas_county.toml")
    df = pd.read_csv(spec.data_path())
    sub = df.sample(n=n, random_state=20181).sort_values("id")
    path = tmp / "lucas_subset.csv"
    sub.to_csv(path, index=False)
    return spec.replace("data", path=str(path))


def _draws(fit, L: int):
    post = fit.idata.posterior
    flat = implicate_draw_index(post.sizes["chain"], post.sizes["draw"], L)
    ci, di = np.divmod(flat, post.sizes["draw"])
    pick = {k: post[k].values[ci, di] for k in ("beta", "sigma2", "nugget", "phi")}
    return flat, pick


def _release(fit, X, site_index, L):
    flat, d = _draws(fit, L)
    effect = (fit.effects(flat) * fit.scales(flat))[:, site_index]
    return release_predictive(X, d["beta"], effect, d["nugget"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", choices=("bundled", "paper", "lucas"))
    ap.add_argument("--n", type=int, default=2930, help="Lucas subset size")
    ap.add_argument("--implicates", type=int)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = _spec(args.data, args.n, Path(tmp))
        if args.implicates:
            spec = spec.replace("synthesis", n_implicates=args.implicates)
        t0 = time.perf_counter()
        res = run_release(spec)
        t_run = time.perf_counter() - t0
    data, L = res.data, spec.synthesis.n_implicates
    site_index = data.sites.site_index
    coords = data.sites.coords_m[site_index]
    engine = res.fits["unrestricted"].engine.get("gp", "exact")
    g = spec.data.back_transform
    measures = measures_from(eps=spec.risk.eps, p=spec.risk.p)

    t1 = time.perf_counter()
    with threadpool_limits(limits=2):
        preds = {m: _release(res.fits[m], data.X, site_index, L) for m in MODELS}
        t_release = time.perf_counter() - t1
        t2 = time.perf_counter()
        _, d = _draws(res.fits["unrestricted"], L)
        subject = data.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
        precision = (exact_precision(coords) if engine == "exact"
                     else nngp_precision(coords, spec.model.n_neighbors))
        loo = baseline_loo(data.y, data.X, beta=d["beta"], sigma2=d["sigma2"], phi=d["phi"],
                           alpha=d["nugget"] / d["sigma2"], precision_of=precision,
                           blocks=loo_blocks(site_index, subject))
        t_loo = time.perf_counter() - t2
        t3 = time.perf_counter()
        records = {}
        for m in MODELS:
            syn = res.implicates[m]["y_synthetic"].values
            records[m] = score_records(data.y, synthetic=syn, release=preds[m], baseline_loo=loo,
                                       baseline_public=baseline_public(syn, data.X),
                                       measures=measures, g=g)
        at = res.at_risk.at_risk
        summary = attributable_summary(records, {"at_risk": at, "other": ~at})
        t_score = time.perf_counter() - t3
    t_base = t_loo + t_score + t_release

    # check: the implicates are draws from the reconstructed release predictive
    for m in MODELS:
        z = (res.implicates[m]["y_synthetic"].values - preds[m].mean) / preds[m].sd
        print(f"{m}: implicates vs predictive: z mean {z.mean():+.3f}, sd {z.std():.3f}")
    print(f"\n{args.data}: N = {data.n_records}, sites = {data.sites.n_sites}, L = {L}, "
          f"engine = {engine}, at-risk = {int(at.sum())}, distinct LOO cells = "
          f"{len(np.unique(np.column_stack([d['phi'], d['nugget'] / d['sigma2']]), axis=0))}")
    print(f"seconds: run {t_run:.1f}; baselines {t_base:.1f} (release predictive "
          f"{t_release:.1f}, LOO {t_loo:.1f}, public + scoring + summary {t_score:.1f}) = "
          f"{100 * t_base / t_run:.0f} % of the run")
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    tab = summary.table
    cols = ["model", "group", "measure", "n_records", "release", "release_realised",
            "baseline_loo", "baseline_public", "baseline_source", "attributable",
            "largest_attributable", "loo_stronger_share"]
    for attack in ("share", "average"):
        print(f"\nattack = {attack}")
        t = tab[tab["attack"] == attack][cols + (["release_form"] if attack == "average"
                                                 else [])]
        print(t.round(3).to_string(index=False))
    for m in MODELS:
        for key in (x.key for x in measures):
            a = summary.record_attributable(m, key, "share")
            print(f"{m} {key}: records with attributable > 0.10: {int((a > 0.10).sum())}; "
                  f"realised share - RB: sd {np.std(records[m].per_record['share'].sel(measure=key).values - records[m].per_record['release'].sel(measure=key).values):.3f}")  # noqa: E501


if __name__ == "__main__":
    main()
