"""Time the main job on the bundled example, stage by stage (compilation included).

Prints wall seconds per stage (load, each fit split into compile / sample / recover, synthesis,
risk, utility, writing) and the peak resident memory. Run in a fresh process: nutpie compiles
each model anew, so the figures include compilation.

Usage: python benchmarks/bench_pipeline.py [SPEC] [--draws N --tune N --implicates L]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import run_release
from synthgeo.release.report import render_report
from synthgeo.release.writer import write_release


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", nargs="?", default=None)
    ap.add_argument("--draws", type=int)
    ap.add_argument("--tune", type=int)
    ap.add_argument("--implicates", type=int)
    args = ap.parse_args()
    spec = load_spec(Path(args.spec) if args.spec else bundled_spec_path())
    over = {k: v for k, v in (("draws", args.draws), ("tune", args.tune)) if v}
    if over:
        spec = spec.replace("sampling", **over)
    if args.implicates:
        spec = spec.replace("synthesis", n_implicates=args.implicates)
    t0 = time.perf_counter()
    res = run_release(spec)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_release(res, Path(tmp) / "out", report_html=render_report(res))
    t2 = time.perf_counter()
    print(f"spec: {spec.source}  N = {res.data.n_records}, sites = {res.data.sites.n_sites}, "
          f"chains x (tune + draws) = {spec.sampling.chains} x ({spec.sampling.tune} + "
          f"{spec.sampling.draws}), L = {spec.synthesis.n_implicates}")
    print(f"{'stage':<28}{'seconds':>9}")
    for k, v in res.seconds.items():
        print(f"{k:<28}{v:9.1f}")
        if k.startswith("fit_"):
            fit = res.fits[k[4:]]
            for part, sec in fit.seconds.items():
                print(f"  {part:<26}{sec:9.1f}")
            c = fit.convergence
            print(f"  {'(max R-hat, min ESS bulk/tail, divergences)':<26} {c.max_r_hat:.3f}, "
                  f"{c.min_ess_bulk:.0f}/{c.min_ess_tail:.0f}, {c.n_divergent}")
    print(f"{'report + write':<28}{t2 - t1:9.1f}")
    print(f"{'total':<28}{t2 - t0:9.1f}")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
