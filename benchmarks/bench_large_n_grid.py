"""The large-N grid fit: the tilted (Hessian-standardised) grid against the axis-aligned box.

Issue 28 (a million records; the fit's time grew faster than N). The simulated paper-style
design (``simulate_design.py``) is drawn at each size n and its unrestricted model fitted
twice by ``synthgeo.inference.grid.fit_gp_grid`` as ``synthgeo run`` fits it (NNGP, m = 15,
coordinate ordering, 2 × 1000 draws, two threads), each fit in a fresh process of its own:

- ``axis-aligned``: the route before 2026-12-07 (``QuadratureSettings(laplace_frame=False)``):
  the L-BFGS-B mode search and a first box of mode ± 5 marginal sd on the axes;
- ``tilted``: the default: Newton steps on batched finite differences and the first grid in
  z = C⁻¹(θ − mode) (docs/inference.md, "Large N").

A warm-up fit of each variant at 10⁴ records runs first, untimed, so that numba's compiled
kernels are in the cache (a fresh checkout compiles them in its first process). Printed per
fit: wall seconds by stage (neighbour search and set-up, grid, draws), the cells
evaluated (of which the mode search's), the grids refined, the largest cell's mass, the
Laplace correlation of log range and logit nugget share, the importance ESS and the process's
peak RSS; per size, the tilted fit's posterior quantiles (2.5/50/97.5 %) of the range and the
nugget share minus the axis-aligned fit's, in the axis-aligned posterior sd. A record goes to
``benchmarks/results/`` (``_record.py``)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_large_n_grid.py --n 10000 100000 300000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import ROOT, Record  # noqa: E402

VARIANTS = ("axis-aligned", "tilted")
QUANTILES = (0.025, 0.5, 0.975)


def _child(folder: Path, variant: str) -> dict:
    """Fit the unrestricted model with one variant; its figures as a dict."""
    from synthgeo.config import load_spec
    from synthgeo.inference.grid_posterior import GridSettings
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.pipeline.run import make_fitter

    warnings.simplefilter("ignore", UserWarning)
    spec = load_spec(folder / "spec.toml")
    data = prepare_data(spec)
    fit = make_fitter(spec, data)
    settings = GridSettings(laplace_frame=(variant == "tilted"))
    t = time.perf_counter()
    f = fit(random_seed=1, label="unrestricted", settings=settings)
    wall = time.perf_counter() - t
    e = f.engine
    q = f.grid.quadrature
    post = f.posterior
    rng = post["range"].values.ravel()
    share = (post["nugget"] / (post["sigma2"] + post["nugget"])).values.ravel()
    return {
        "fit_s": wall, "stage_s": {k: float(v) for k, v in f.seconds.items()},
        "evaluations": int(e["grid_evaluations"]),
        "mode_search_evaluations": int((e.get("grid_laplace_start") or {}).get("evaluations", 0)),
        "grids": len(e["grid_stages"]), "max_cell_mass": float(e["max_cell_mass"]),
        "correlation": (e.get("grid_laplace_start") or {}).get("correlation"),
        "importance_ess": float(e["importance_ess"]), "problems": list(e["grid_problems"]),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "range_q": [float(v) for v in f.grid.quantiles("range_m", QUANTILES)],
        "nugget_share_q": [float(v) for v in f.grid.quantiles("nugget_share", QUANTILES)],
        "range_sd": float(np.std(rng, ddof=1)), "nugget_share_sd": float(np.std(share, ddof=1)),
        "tilted": q.frame is not None,
    }


def _run_child(folder: Path, variant: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(folder), variant],
                         check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Fit each size with both variants, print and record the figures."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    ap.add_argument("--child", nargs=2, metavar=("FOLDER", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(Path(args.child[0]), args.child[1])))
        return
    rec = Record.start("bench_large_n_grid", case="-".join(f"n{n}" for n in args.n))
    with tempfile.TemporaryDirectory() as tmp:  # numba compiles its kernels into the cache
        subprocess.run([sys.executable, str(Path(__file__).parent / "simulate_design.py"),
                        "--n", "10000", "--out", tmp], check=True, capture_output=True)
        for variant in VARIANTS:  # once, untimed: no fit below pays the compilation
            _run_child(Path(tmp), variant)
    rows = []
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            subprocess.run([sys.executable, str(Path(__file__).parent / "simulate_design.py"),
                            "--n", str(n), "--out", str(folder)], check=True,
                           capture_output=True)
            row = {"n": n}
            for variant in VARIANTS:
                load = os.getloadavg()[0]
                r = row[variant] = _run_child(folder, variant)
                print(f"n = {n:,} {variant:>12}: {r['fit_s']:6.1f} s (set-up "
                      f"{r['stage_s']['setup']:.1f}, grid {r['stage_s']['grid']:.1f}, draws "
                      f"{r['stage_s']['draws']:.1f}); {r['evaluations']} cells "
                      f"({r['mode_search_evaluations']} mode search), {r['grids']} grid(s), "
                      f"largest cell {r['max_cell_mass']:.3f}, ESS {r['importance_ess']:.1f}, "
                      f"correlation {r['correlation']}, peak {r['peak_rss_mib']:.0f} MiB, "
                      f"load {load:.2f}", flush=True)
            a, t = row["axis-aligned"], row["tilted"]
            row["diff_sd"] = {
                "range": [(x - y) / a["range_sd"] for x, y in zip(t["range_q"], a["range_q"])],
                "nugget_share": [(x - y) / a["nugget_share_sd"]
                                 for x, y in zip(t["nugget_share_q"], a["nugget_share_q"])]}
            print(f"n = {n:,}: tilted − axis-aligned quantiles (2.5/50/97.5 %) in posterior sd: "
                  f"range {np.round(row['diff_sd']['range'], 3).tolist()}, nugget share "
                  f"{np.round(row['diff_sd']['nugget_share'], 3).tolist()}", flush=True)
            rows.append(row)
            for variant in VARIANTS:
                r = row[variant]
                rec.figure(f"n = {n:,}: {variant} fit", round(r["fit_s"], 1), "s")
                rec.figure(f"n = {n:,}: {variant} cells evaluated (mode search)",
                           f"{r['evaluations']} ({r['mode_search_evaluations']})", "")
                rec.figure(f"n = {n:,}: {variant} grids, largest cell",
                           f"{r['grids']}, {r['max_cell_mass']:.3f}", "")
            rec.figure(f"n = {n:,}: Laplace correlation of log range and logit nugget share",
                       round(float(t["correlation"]), 3), "")
            rec.figure(f"n = {n:,}: largest quantile difference (tilted − axis-aligned)",
                       round(float(np.max(np.abs(row["diff_sd"]["range"]
                                                 + row["diff_sd"]["nugget_share"]))), 3),
                       "posterior sd")
    rec.finish(detail={"rows": rows})


if __name__ == "__main__":
    main()
