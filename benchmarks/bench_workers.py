"""Fit and synthesis time against the number of dask.distributed workers, at 10⁵ records.

The simulated paper-style design (``simulate_design.py``) is fitted once (unrestricted model,
grid route, NNGP); its L implicates are then drawn in this process and on a ``LocalCluster``
of 1 and 2 single-threaded worker processes, and the implicates are checked to be identical.
On a 2-core machine a LocalCluster measures the dispatch (scatter, tasks, gathering in order),
not what a real cluster would gain. The fit's grid cells run on the cluster too (:func:`synthgeo.compute.
map_batches`, ``[compute] scheduler``); the posterior draws and the implicates are checked to be
identical to the local run's. The figures are written as a record in ``benchmarks/results/``
(``_record.py``), from which ``make_performance.py`` makes docs/performance.md.

    python benchmarks/bench_workers.py [--n 100000] [--implicates 100] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402
from simulate_design import SPEC, simulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--implicates", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()
    rec = Record.start("bench_workers", case="default" if (a.n, a.implicates) == (100_000, 100)
                       else f"n{a.n}-L{a.implicates}")
    from distributed import LocalCluster

    from synthgeo.config import load_spec
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.pipeline.run import make_fitter
    from synthgeo.synthesis.implicates import ImplicateDraws, implicate_blocks

    warnings.simplefilter("ignore", UserWarning)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        simulate(a.n).to_csv(folder / "data.csv", index=False, float_format="%.10g")
        (folder / "spec.toml").write_text(SPEC.format(n=a.n, seed=1, L=a.implicates))
        spec = load_spec(folder / "spec.toml")
        data = prepare_data(spec)
    rows = []

    def fit(scheduler=None):  # [compute] scheduler: the grid's cells as tasks
        t = time.perf_counter()
        f = make_fitter(spec.replace("compute", scheduler=scheduler), data)(
            random_seed=1, label="unrestricted")
        return f, time.perf_counter() - t

    def synthesize(f, scheduler=None):
        t = time.perf_counter()
        draws = ImplicateDraws.from_fit(f, a.implicates)
        t_draws = time.perf_counter() - t
        y = np.vstack([b for _, b in implicate_blocks(
            draws, data.X, data.sites.site_index, seed=7, chunk=a.chunk, scheduler=scheduler)])
        return y, t_draws, time.perf_counter() - t - t_draws

    f, t_fit = fit()
    y0, t_w, t_syn = synthesize(f)
    rows.append(("this process", 0, t_fit, t_w, t_syn, True))
    for k in a.workers:
        with LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:
            addr = cluster.scheduler_address
            f_k, t_fit_k = fit(addr)
            same_fit = bool(np.array_equal(f_k.idata.posterior["sigma2"].values,
                                           f.idata.posterior["sigma2"].values))
            y, t_w, t_syn = synthesize(f, addr)
        rows.append((f"LocalCluster({k} x 1 thread)", k, t_fit_k, t_w, t_syn,
                     bool(np.array_equal(y, y0)) and same_fit))
    print(f"N = {a.n:,} records, {data.sites.n_sites:,} sites, L = {a.implicates} "
          f"(blocks of {a.chunk}); fit = unrestricted grid/NNGP fit; w draws = effect draws "
          "for the implicates (in this process); blocks = the implicate stream")
    print(f"{'route':28s} {'fit s':>7s} {'w draws s':>10s} {'blocks s':>9s}  identical")
    for route, _, tf, tw, ts, same in rows:
        fit_s = "local" if np.isnan(tf) else f"{tf:7.1f}"
        print(f"{route:28s} {fit_s:>7s} {tw:10.1f} {ts:9.1f}  {same}")
        rec.figure(f"{route}: unrestricted grid fit", round(tf, 1), "s")
        rec.figure(f"{route}: implicate blocks", round(ts, 1), "s")
    rec.figure("cluster draws and implicates identical to this process's",
               "yes" if all(r[5] for r in rows) else "NO", "")
    rec.finish(detail={"n": a.n, "implicates": a.implicates, "chunk": a.chunk,
                       "sites": int(data.sites.n_sites),
                       "rows": [{"route": r[0], "workers": r[1], "fit_s": round(r[2], 2),
                                 "w_draws_s": round(r[3], 2), "blocks_s": round(r[4], 2),
                                 "identical": r[5]} for r in rows]})


if __name__ == "__main__":
    main()
