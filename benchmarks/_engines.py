"""Shared by the NNGP benchmarks and the accuracy test: run both engines on one data set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from synthgeo.config import load_spec
from synthgeo.pipeline import run_release

SPEC = """
[data]
path = "{path}"
x = "x_m"
y = "y_m"
crs = "{crs}"
id = "id"
response = "{response}"
back_transform = "exp"
covariates = {covariates}
target_crs = "{crs}"

[model]
gp = "{gp}"
n_neighbors = {m}

[sampling]
sampler = "grid"
chains = 2
draws = 1000
seed = {seed}
on_convergence_failure = "warn"

[synthesis]
n_implicates = {L}

[risk]
eps = [10000.0]
p = [0.1]

[anonymity]
on_location_failure = "warn"  # exact locations released: the engines are compared, not a release
"""


def run_engine(frame: pd.DataFrame, folder: Path, *, gp: str, response: str,
               covariates: list[str], crs: str, m: int = 15, L: int = 100, seed: int = 1):
    """Write ``frame`` and a spec into ``folder`` and run the release pipeline (no writing)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data.csv"
    if not data.exists():
        frame.to_csv(data, index=False)
    spec_path = folder / f"spec_{gp}.toml"
    spec_path.write_text(SPEC.format(path=data.name, crs=crs, response=response,
                                     covariates=str(list(covariates)).replace("'", '"'),
                                     gp=gp, m=m, L=L, seed=seed))
    return run_release(load_spec(spec_path))


def compare(exact, nngp) -> dict:
    """Differences NNGP − exact: posterior means in exact posterior sds; restricted risk."""
    out = {}
    for model in ("unrestricted", "restricted"):
        pe, pn = exact.fits[model].idata.posterior, nngp.fits[model].idata.posterior
        for var in ("sigma2", "nugget", "phi"):
            sd = float(pe[var].std())
            out[f"{model}:{var}"] = (float(pn[var].mean()) - float(pe[var].mean())) / sd
        for c in pe["beta"]["coef"].values:
            e, n = pe["beta"].sel(coef=c), pn["beta"].sel(coef=c)
            out[f"{model}:beta[{c}]"] = (float(n.mean()) - float(e.mean())) / float(e.std())
    risk = {}
    for name, res in (("exact", exact), ("nngp", nngp)):
        r = res.risk["restricted"].per_record["risk_rel"].sel(p=0.1).values
        at = np.asarray(res.at_risk.at_risk, bool)
        risk[name] = (float(r.mean()), float(r[at].mean()) if at.any() else np.nan,
                      int(at.sum()))
    out["risk_all_diff"] = risk["nngp"][0] - risk["exact"][0]
    out["risk_at_risk_diff"] = risk["nngp"][1] - risk["exact"][1]
    out["n_at_risk"] = (risk["exact"][2], risk["nngp"][2])
    return out
