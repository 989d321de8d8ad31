"""Shared by the NNGP benchmarks and the accuracy test: run both engines on one data set."""

from __future__ import annotations

import geopandas
import numpy as np
import pandas as pd

import synthgeo as sg


def run_engine(frame: pd.DataFrame, *, gp: str, response: str, covariates: list[str], crs: str,
               m: int = 15, L: int = 100, seed: int = 1):
    """Run the release job on ``frame`` (columns ``id``, ``x_m``, ``y_m`` in `crs`) in memory.

    The front door with the spec's sections as types (no file, no TOML); returns the
    :class:`synthgeo.pipeline.ReleaseResult` (``Release.result``), nothing written.
    """
    points = geopandas.GeoDataFrame(
        frame, geometry=geopandas.points_from_xy(frame["x_m"], frame["y_m"]), crs=crs)
    rel = sg.synthesize(
        points, response=response, covariates=covariates, id="id", x="x_m", y="y_m",
        back_transform="exp", implicates=L, seed=seed,
        accept_offshore=True,  # the paper's abstract square lies at 0°N 0°E, at sea
        model=sg.ModelConfig(gp=gp, n_neighbors=m),
        sampling=sg.SamplingConfig(sampler="grid", chains=2, draws=1000,
                                   on_convergence_failure="warn"),
        risk=sg.RiskConfig(eps=[10000.0], p=[0.1]),
        # exact locations released: the engines are compared, not a release
        anonymity=sg.AnonymityConfig(on_location_failure="warn"))
    return rel.result


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
