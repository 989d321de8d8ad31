"""Posterior mass at the prior bounds of the grid fit: the cases behind its warning's threshold.

For each case the unrestricted grid fit (:func:`synthgeo.inference.grid.fit_gp_grid`, default
priors) and the posterior mass in the band next to the range's minimum and maximum and the
nugget share's maximum (:mod:`synthgeo.inference.prior_bound`: 5 % of the prior box on the grid's
axis). Shipped specs (the bundled job, sacramento_all, the paper simulation; Lucas County with
``--lucas``, about 40 s more) and simulated designs whose true range lies above, at or below
the prior's minimum (the median distance from a location to its nearest other). Writes a record
and, with ``--doc``, the table of docs/inference.md ("Posterior mass at a prior bound")::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_prior_bound.py --lucas --doc
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.distance import cdist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import ROOT, Record, replace_block  # noqa: E402

from synthgeo.config import SamplingConfig, load_spec  # noqa: E402
from synthgeo.inference.grid import fit_gp_grid  # noqa: E402
from synthgeo.inference.prior_bound import BOUND_BAND  # noqa: E402
from synthgeo.model.kernels import exponential_correlation, make_sites  # noqa: E402
from synthgeo.model.restricted_gp import default_priors  # noqa: E402
from synthgeo.pipeline import prepare_data  # noqa: E402
from synthgeo.testing import simulate_gp  # noqa: E402

DOC = ROOT / "docs" / "inference.md"
BEGIN = "<!-- BEGIN bench_prior_bound -->"
END = "<!-- END bench_prior_bound -->"


def band_masses(fit) -> dict[str, float]:
    """Posterior mass in the band next to each bound (the warning's own measure)."""
    q = fit.grid.quadrature
    out = {}
    for name, key in (("log_range_m", "range"), ("logit_nugget_share", "share")):
        a = q.axes[[x.name for x in q.axes].index(name)]
        w = BOUND_BAND * (a.upper - a.lower)
        out[f"{key}_min"] = max(0.0, q.cdf(name, a.lower + w))
        out[f"{key}_max"] = max(0.0, 1.0 - q.cdf(name, a.upper - w))  # no -0.000
    return out


def fit_case(y, X, sites, gp="exact", n_neighbors=15) -> dict:
    """Fit one case; return its prior box, 95 % range interval, band masses and flags."""
    priors = default_priors(y, X, sites)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_gp_grid(y, X, sites, priors=priors,
                          coef_names=[f"b{i}" for i in range(X.shape[1])],
                          config=SamplingConfig(chains=1, draws=200, seed=1), gp=gp,
                          n_neighbors=n_neighbors)
    lo, hi = np.exp(fit.grid.quadrature.quantile("log_range_m", [0.025, 0.975]))
    return {"range_min_m": priors.range_min_m, "range_max_m": priors.range_max_m,
            "interval_m": [float(lo), float(hi)], **band_masses(fit),
            "flagged": [f"{b['parameter']} {b['bound']}"
                        for b in fit.engine.get("posterior_at_prior_bound", [])]}


def paired(range_m: float, seed: int, *, n: int = 260, pairs: int = 50, gap_m: float = 1.0,
           side_m: float = 3000.0):
    """Draw an exponential GP at n uniform locations, `pairs` of them with a neighbour nearby."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, side_m, (n, 2))
    pick = rng.choice(n, pairs, replace=False)
    angle = rng.uniform(0, 2 * np.pi, pairs)
    xy = np.vstack([base, base[pick] + gap_m * np.column_stack([np.cos(angle),
                                                                np.sin(angle)])])
    m = len(xy)
    cov = 4.0 * exponential_correlation(cdist(xy, xy), 3.0 / range_m) + 1e-10 * np.eye(m)
    X = np.column_stack([np.ones(m), rng.standard_normal(m)])
    y = X @ [1.0, 0.5] + np.linalg.cholesky(cov) @ rng.standard_normal(m) + rng.normal(
        0, 0.25, m)
    return y, X, make_sites(xy)


def cases(lucas: bool):
    """Yield (group, label, fitted case)."""
    specs = ["sacramento_2bed", "sacramento_all", "paper_simulation"] + (
        ["lucas_county"] if lucas else [])
    for name in specs:
        spec = load_spec(ROOT / "models" / f"{name}.toml")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = prepare_data(spec)
        yield name, name, fit_case(data.y, data.X, data.sites,
                                   gp=spec.model.engine_for(data.n_records),
                                   n_neighbors=spec.model.n_neighbors)
    for r0 in (40.0, 60.0, 5.0, 10.0, 20.0, 30.0):
        for seed in range(3):
            d = simulate_gp(300, phi_per_m=3.0 / r0, random_seed=seed)
            group = "uniform, true range above the minimum" if r0 >= 40 else \
                "uniform, true range at or below the minimum"
            yield group, f"uniform r0={r0:g} seed={seed}", fit_case(
                d["y"], d["X"], make_sites(d["coords_m"]))
    for r0 in (100.0, 20.0, 5.0):
        for seed in range(4):
            group = {100.0: "1 m pairs, true range 100 m", 20.0: "1 m pairs, true range 20 m",
                     5.0: "1 m pairs, true range 5 m"}[r0]
            yield group, f"pairs r0={r0:g} seed={seed}", fit_case(*paired(r0, seed))


def _span(values, fmt="{:.3f}") -> str:
    lo, hi = max(0.0, min(values)), max(0.0, max(values))
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"


def doc_block(rows: list[tuple[str, str, dict]], rec_name: str) -> str:
    """Return the docs table: one row per group (ranges over its cases)."""
    groups: dict[str, list[dict]] = {}
    for group, _, r in rows:
        groups.setdefault(group, []).append(r)
    lines = [BEGIN, "", "| case | cases | range prior min (m) | 95 % interval (m) | mass at min | "
             "at max | share max | flagged |", "|---|---|---|---|---|---|---|---|"]
    for group, rs in groups.items():
        flagged = sum(bool(r["flagged"]) for r in rs)
        lines.append(
            f"| {group} | {len(rs)} | {_span([r['range_min_m'] for r in rs], '{:,.0f}')} | "
            f"{min(r['interval_m'][0] for r in rs):,.0f}–"
            f"{max(r['interval_m'][1] for r in rs):,.0f} | "
            f"{_span([r['range_min'] for r in rs])} | {_span([r['range_max'] for r in rs])} | "
            f"{_span([r['share_max'] for r in rs])} | {flagged} of {len(rs)} |")
    lines += ["", f"(`benchmarks/bench_prior_bound.py`, record `benchmarks/results/{rec_name}`.)",
              "", END]
    return "\n".join(lines)


def main() -> None:
    """Run the cases, print them, write the record (and the docs table with ``--doc``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lucas", action="store_true", help="add Lucas County (25,357 records)")
    ap.add_argument("--doc", action="store_true", help="rewrite the table in docs/inference.md")
    ap.add_argument("--doc-from", metavar="RECORD", help="rewrite the table from a record of "
                    "this script (nothing is run)")
    args = ap.parse_args()
    if args.doc_from:
        import json

        detail = json.loads(Path(args.doc_from).read_text(encoding="utf-8"))["detail"]
        rows = [(c.pop("group"), c.pop("label"), c) for c in detail["cases"]]
        replace_block(DOC, BEGIN, END, doc_block(rows, Path(args.doc_from).name))
        return
    rec = Record.start("bench_prior_bound", case="lucas" if args.lucas else "default")
    rows = []
    for group, label, r in cases(args.lucas):
        rows.append((group, label, r))
        print(f"{label:32s} min {r['range_min_m']:8,.0f} m  interval "
              f"{r['interval_m'][0]:8,.0f}–{r['interval_m'][1]:8,.0f} m  mass at min "
              f"{r['range_min']:.3f} max {r['range_max']:.3f} share max {r['share_max']:.3f} "
              f"{r['flagged'] or ''}", flush=True)
    for name in ("sacramento_2bed", "sacramento_all", "paper_simulation", "lucas_county"):
        r = next((r for g, _, r in rows if g == name), None)
        if r is not None:
            rec.figure(f"{name}: largest band mass at a prior bound",
                       max(r["range_min"], r["range_max"], r["share_max"]), "share")
    path = rec.finish(detail={"cases": [{"group": g, "label": lab, **r} for g, lab, r in rows]})
    print(f"record: {path}")
    if args.doc:
        replace_block(DOC, BEGIN, END, doc_block(rows, path.name))


if __name__ == "__main__":
    main()
