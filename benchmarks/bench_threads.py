"""Dense Cholesky factorisations in one and two threads: SciPy's wrapper vs synthgeo's.

The exact GP's grid cells, draws and effect draws run in two threads with one BLAS thread
each. SciPy's ``scipy.linalg.cho_factor`` holds the GIL during LAPACK, so its two threads run
one at a time; ``synthgeo.inference.factor.cho_factor`` calls the same ``dpotrf`` without it
(module docstring there). Prints milliseconds per factorisation of an N x N exponential
correlation matrix plus nugget, in one thread and in two.

    python benchmarks/bench_threads.py [--n 500] [--count 400]
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg as sl
from scipy.spatial.distance import cdist
from threadpoolctl import threadpool_limits

from synthgeo.inference.factor import cho_factor


def main() -> None:
    """Time and print."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--count", type=int, default=400)
    args = ap.parse_args()
    xy = np.random.default_rng(0).random((args.n, 2))
    K = np.exp(-7.0 * cdist(xy, xy)) + 0.05 * np.eye(args.n)
    routes = {
        "scipy.linalg.cho_factor": lambda a: sl.cho_factor(a, lower=True, overwrite_a=True,
                                                            check_finite=False),
        "synthgeo cho_factor": cho_factor,
    }
    print(f"N = {args.n}, {args.count} factorisations, cores {os.cpu_count()}, load "
          f"{os.getloadavg()[0]:.2f}")
    with threadpool_limits(limits=1):
        for name, fn in routes.items():
            def work(k, fn=fn):
                buf = np.empty_like(K)
                for _ in range(k):
                    np.copyto(buf, K)
                    fn(buf)

            work(5)
            t = time.perf_counter()
            work(args.count)
            one = time.perf_counter() - t
            with ThreadPoolExecutor(2) as ex:
                t = time.perf_counter()
                list(ex.map(work, [args.count // 2, args.count - args.count // 2]))
                two = time.perf_counter() - t
            print(f"{name:<24} 1 thread {one / args.count * 1e3:5.2f} ms, 2 threads "
                  f"{two / args.count * 1e3:5.2f} ms per factorisation (x{one / two:.2f})")


if __name__ == "__main__":
    main()
