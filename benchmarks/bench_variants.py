"""Smoothing variants on the paper's simulated design: one release per variant, printed as a table
(at-risk count, restricted β₀ and τ², the isolated record's synthetic mean and risk, reductions,
CI overlap of the analyst's intercept, seconds).

    python benchmarks/bench_variants.py
"""

from pathlib import Path

import time, numpy as np, pandas as pd
from synthgeo.config import load_spec
from synthgeo.pipeline import run_release
base = load_spec(Path(__file__).resolve().parents[1] / 'models' / 'paper_simulation.toml')
rows = []
for label, changes in [("binary, gamma=inf", {}),
                       ("binary, gamma=inf, kriged", dict(at_risk_effect="kriged")),
                       ("binary, gamma=auto", dict(gamma="auto")),
                       ("binary, gamma=10", dict(gamma=10.0)),
                       ("continuous, gamma=auto", dict(gamma="auto", at_risk_weight="continuous")),
                       ("continuous, gamma=100", dict(gamma=100.0, at_risk_weight="continuous")),
                       ("M_m=200, gamma=inf", dict(M_m=200.0)),
                       ("k=3, gamma=inf", dict(k=3))]:
    t = time.perf_counter()
    r = run_release(base.replace("model", **changes))
    o = int(np.flatnonzero(r.data.record_id == 500)[0])
    ru = r.risk["unrestricted"].per_record; rr = r.risk["restricted"].per_record
    s = r.risk_summary.set_index(["group", "measure"])["reduction"]
    post = r.fits["restricted"].idata.posterior
    rows.append(dict(variant=label, n_at_risk=r.at_risk.n_at_risk,
        beta0=float(post["beta"].mean()), tau2=float(post["nugget"].mean()),
        outlier_mean=float(r.implicates["restricted"]["y_synthetic"].values[:, o].mean()),
        outlier_abs_u=float(ru["risk_abs"].values[o, 0]), outlier_abs_r=float(rr["risk_abs"].values[o, 0]),
        outlier_rel_u=float(ru["risk_rel"].values[o, 0]), outlier_rel_r=float(rr["risk_rel"].values[o, 0]),
        red_at_risk_rel=s[("at_risk", "within 10%")], red_other_rel=s[("other", "within 10%")],
        red_other_abs=s[("other", "within $10,000")],
        ci_overlap=float(r.utility.query("model=='restricted'")["ci_overlap"].iloc[0]),
        secs=time.perf_counter() - t))
pd.set_option("display.width", 250)
print(pd.DataFrame(rows).round(3).to_string(index=False))
