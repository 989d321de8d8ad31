"""A paper-style simulated design at city size (default 10⁵ records), seeded: data + spec.

The design of Quick, Holan & Wikle (2018, Sect. 4) scaled up: most records in dense clusters,
some scattered uniformly, a few isolated far from everyone; intercept near log $50,000 plus
one released covariate; exponential GP with σ² = 4 and τ² = 0.0625 (the paper's values) and
an effective range of 2 km (the paper's 0.236 units are too short for a 30 km city). The GP
is drawn exactly from its NNGP approximation (m = 15, Datta et al. 2016) because a dense
Cholesky of 10⁵ points is out of reach.

Writes ``data.csv`` (``id, x_m, y_m, x1, log_income, w_true``) and ``spec.toml`` (grid
sampler, NNGP, L = 100) into ``--out``::

    python benchmarks/simulate_design.py --n 100000 --out /tmp/design
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse.linalg as spla

from synthgeo.model.vecchia import ordered_neighbours, vecchia_factors
from synthgeo.testing import clustered_points

SPEC = """# simulated paper-style design, {n} records (benchmarks/simulate_design.py, seed {seed})
[data]
path = "data.csv"
x = "x_m"
y = "y_m"
crs = "EPSG:32617"
id = "id"
response = "log_income"
back_transform = "exp"
covariates = ["x1"]
target_crs = "EPSG:32617"
accept_offshore = true  # the simulated design lies in the Pacific off Colombia (UTM 17N)

[model]
gp = "nngp"
n_neighbors = 15
rho0 = 0.2
k = 2
gamma = "inf"

[sampling]
sampler = "grid"
chains = 2
draws = 1000
seed = 20181
on_convergence_failure = "warn"

[synthesis]
n_implicates = {L}

[risk]
eps = [10000.0]
p = [0.1]

[utility]
formula = "log_income ~ x1"
alpha = 0.05

[anonymity]
# a timing benchmark: the location verdict (a FAIL for the few isolated records the design
# places on purpose) is recorded, not a stop
on_location_failure = "warn"
"""


def simulate(n: int, *, seed: int = 1, extent_m: float = 30_000.0, range_m: float = 2000.0,
             n_isolated: int = 20) -> pd.DataFrame:
    """Draw the design: clusters + scatter + isolated records, GP effect by NNGP."""
    rng = np.random.default_rng(seed)
    xy = clustered_points(n - n_isolated, n_clusters=30, cluster_sd_m=800.0,
                          clustered_share=0.9, extent_m=extent_m, random_seed=rng)
    # isolated records: 5 km outside the square's edges, far from everyone
    far = np.column_stack([rng.uniform(0, extent_m, n_isolated),
                           np.full(n_isolated, -5_000.0 - rng.uniform(0, 2000, n_isolated))])
    xy = np.vstack([xy, far]) + 500_000.0  # somewhere in UTM 17N, metres
    km = xy / 1000.0
    graph = ordered_neighbours(km, 15)
    f = vecchia_factors(graph, 3.0 / (range_m / 1000.0), 0.0)
    z = rng.standard_normal(n) * np.sqrt(f.F)
    w_ord = spla.spsolve_triangular(f.i_minus_b(), z, lower=True)
    w = np.empty(n)
    w[graph.order] = 2.0 * w_ord  # sigma2 = 4
    x1 = rng.standard_normal(n)
    y = np.log(50_000.0) + 0.1 * x1 + w + rng.normal(0, 0.25, n)  # tau2 = 0.0625
    return pd.DataFrame({"id": np.arange(1, n + 1), "x_m": xy[:, 0], "y_m": xy[:, 1],
                         "x1": x1, "log_income": y, "w_true": w})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--implicates", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    simulate(a.n, seed=a.seed).to_csv(out / "data.csv", index=False, float_format="%.10g")
    (out / "spec.toml").write_text(SPEC.format(n=a.n, seed=a.seed, L=a.implicates))
    print(f"wrote {out / 'data.csv'} ({a.n:,} records) and {out / 'spec.toml'}")


if __name__ == "__main__":
    main()
