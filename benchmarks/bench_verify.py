"""Benchmark of ``synthgeo verify`` (issue 27 item 2): time and the price of the DP noise.

Usage (on a shared machine with OPENBLAS_NUM_THREADS=1)::

    python benchmarks/bench_verify.py [--repeat 5] [--draws 400]

On a release of the bundled spec (``sg.run``, grid sampler, 20 implicates) it measures:

- the wall time of one differentially private request (the spec's model), median of
  ``--repeat``;
- the exact (non-private) measures per coefficient, and the noise-free subsample-and-aggregate
  shares (the subsets' means before the noise): how far subsampling alone moves the answer;
- over ``--draws`` draws of the noise at ε = 0.5, 1, 4 (the mechanism of
  :func:`synthgeo.verification.privacy.release_means` on the one partition): the mean absolute
  error of the released shares against the noise-free ones, and the share of answers whose
  sign agreement for ``sqft_living`` reads above 0.5.

Writes a record under ``benchmarks/results/`` (``benchmarks/_record.py``).
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

FORMULA = "log_price ~ sqft_living"


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and write its record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--draws", type=int, default=400)
    args = ap.parse_args(argv)
    import pandas as pd

    import synthgeo as sg
    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.verification.analysis import Analysis
    from synthgeo.verification.api import default_subsets
    from synthgeo.verification.measures import subset_measures, synthetic_estimate
    from synthgeo.verification.privacy import partition, release_means

    rec = Record.start("bench_verify", case="bundled", argv=argv)
    tmp = Path(tempfile.mkdtemp())
    spec = load_spec(bundled_spec_path()).replace("synthesis", n_implicates=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sg.run(spec.replace("sampling", seed=1)).write(tmp / "out")
    store = tmp / "budget.sqlite"
    walls = []
    for r in range(args.repeat):
        t0 = time.perf_counter()
        res = sg.verify(out, FORMULA, analyst="bench", budget=1e6, epsilon=1.0, store=store,
                        seed=r)
        walls.append(time.perf_counter() - t0)
    rec.figure("one DP verification request (spec's model), median", float(np.median(walls)),
               "s")
    exact = sg.verify(out, FORMULA, analyst="bench", store=store,
                      non_private_reason="benchmark").measures
    # the mechanism on one partition: noise-free shares, then the noise at several ε
    analysis = Analysis(FORMULA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conf = prepare_data(spec).frame
    released = pd.read_parquet(out / "release" / "implicates.parquet")
    implicates = [g.sort_values("id").drop(columns="implicate").reset_index(drop=True)
                  for _, g in released.groupby("implicate")]
    syn = synthetic_estimate(analysis, implicates, response="log_price")
    m = default_subsets(len(conf), 2)
    per = subset_measures(analysis, conf, partition(len(conf), m, np.random.default_rng(0)),
                          syn, n_coef=2)
    noise_free = per.mean(axis=0)
    names = [f"{meas}[{t}]" for meas in ("ci_overlap", "sign", "significance")
             for t in syn.names]
    detail = {"walls_s": walls, "n_subsets": m, "laplace_scale_at_eps_1": res.laplace_scale,
              "exact": exact.to_dict(), "noise_free_shares": dict(zip(names, noise_free)),
              "by_epsilon": {}}
    rec.figure("M (disjoint subsets of the 140 records)", m, "subsets")
    for t in exact.index:  # the agency's non-private answer, for reference
        rec.figure(f"exact (non-private) CI overlap [{t}]",
                   round(float(exact.loc[t, "ci_overlap"]), 3), "overlap")
    for name, v in zip(names, noise_free):
        rec.figure(f"noise-free share, {name}", round(float(v), 3), "share")
    rng = np.random.default_rng(1)
    for eps in (0.5, 1.0, 4.0):
        draws = np.array([release_means(per, eps, rng)[0] for _ in range(args.draws)])
        mae = float(np.mean(np.abs(draws - noise_free)))
        above = float(np.mean(draws[:, 3] > 0.5))  # sign agreement of sqft_living
        rec.figure(f"ε = {eps:g}: mean |released − noise-free| over the 6 shares",
                   round(mae, 3), "share")
        rec.figure(f"ε = {eps:g}: answers whose sqft_living sign agreement reads > 0.5",
                   round(above, 3), "share")
        detail["by_epsilon"][str(eps)] = {"mae": mae, "sign_above_half": above}
    rec.finish(detail=detail)
    for f in rec.figures:
        print(f"{f['name']}: {f['value']} {f['unit']}")


if __name__ == "__main__":
    main()
