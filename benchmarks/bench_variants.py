"""Smoothing variants on the paper's simulated design, one release per variant.

Prints the at-risk count, the restricted β₀ and τ², the isolated record's synthetic mean and
risk (within $10,000 and 10 %, unrestricted vs restricted), the group reductions, the CI
overlap of the analyst's intercept and the seconds per release::

    python benchmarks/bench_variants.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

import synthgeo as sg

SPEC = Path(__file__).resolve().parents[1] / "models" / "paper_simulation.toml"
VARIANTS = [
    ("binary, gamma=inf", {}),
    ("binary, gamma=inf, kriged", {"at_risk_effect": "kriged"}),
    ("binary, gamma=auto", {"gamma": "auto"}),
    ("binary, gamma=10", {"gamma": 10.0}),
    ("continuous, gamma=auto", {"gamma": "auto", "at_risk_weight": "continuous"}),
    ("continuous, gamma=100", {"gamma": 100.0, "at_risk_weight": "continuous"}),
    ("M_m=200, gamma=inf", {"M_m": 200.0}),
    ("k=3, gamma=inf", {"k": 3}),
]


def main() -> None:
    """Run every variant and print one row each."""
    base = sg.load_spec(SPEC)
    rows = []
    for label, changes in VARIANTS:
        t = time.perf_counter()
        r = sg.run(base.replace("model", **changes)).result
        o = int(np.flatnonzero(r.data.record_id == 500)[0])  # the isolated record
        ru, rr = r.risk["unrestricted"].per_record, r.risk["restricted"].per_record
        red = r.risk_summary.set_index(["group", "measure"])["reduction"]
        post = r.fits["restricted"].idata.posterior
        util = r.utility.query("model == 'restricted'")
        rows.append({
            "variant": label, "n_at_risk": r.at_risk.n_at_risk,
            "beta0": float(post["beta"].mean()), "tau2": float(post["nugget"].mean()),
            "outlier_mean": float(r.implicates["restricted"]["y_synthetic"].values[:, o].mean()),
            "outlier_abs_u": float(ru["risk_abs"].values[o, 0]),
            "outlier_abs_r": float(rr["risk_abs"].values[o, 0]),
            "outlier_rel_u": float(ru["risk_rel"].values[o, 0]),
            "outlier_rel_r": float(rr["risk_rel"].values[o, 0]),
            "red_at_risk_rel": red[("at_risk", "within 10%")],
            "red_other_rel": red[("other", "within 10%")],
            "red_other_abs": red[("other", "within $10,000")],
            "ci_overlap": float(util["ci_overlap"].iloc[0]),
            "seconds": time.perf_counter() - t,
        })
    with pd.option_context("display.width", 250):
        print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
