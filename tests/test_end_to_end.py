"""MCMC tests (slow): parameter recovery and the CLI end to end on the bundled spec."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from synthgeo.cli.main import main
from synthgeo.config import SamplingConfig, bundled_spec_path, load_spec
from synthgeo.inference.nuts import fit_gp
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp

pytestmark = pytest.mark.slow

LIGHT = ["--draws", "300", "--tune", "300", "--implicates", "20",
         "--on-convergence-failure", "warn"]


def test_parameter_recovery_on_simulated_gp():
    """A seeded GP (N = 150, range 600 m on a 2 km square): truth inside 95% intervals."""
    sim = simulate_gp(150, beta=(10.0, 0.5), sigma2=1.0, nugget=0.05, phi_per_m=3 / 600.0,
                      extent_m=2000.0, random_seed=7)
    sites = make_sites(sim["coords_m"])
    fit = fit_gp(sim["y"], sim["X"], sites, priors=default_priors(sim["y"], sim["X"], sites),
                 coef_names=["Intercept", "x1"],
                 config=SamplingConfig(draws=600, tune=600, seed=3))
    post = fit.idata.posterior
    assert fit.convergence.max_r_hat < 1.03
    # hyper-parameters are weakly identified at N = 150 (and the IG priors pull the nugget up
    # a little): 99% intervals for each, 95% for the well-identified total variance
    for var, true in (("sigma2", 1.0), ("nugget", 0.05), ("range", 600.0)):
        lo, hi = np.quantile(post[var].values, [0.005, 0.995])
        assert lo < true < hi, (var, lo, hi)
    lo, hi = np.quantile((post["sigma2"] + post["nugget"]).values, [0.025, 0.975])
    assert lo < 1.05 < hi
    for j, true in enumerate((10.0, 0.5)):
        lo, hi = np.quantile(post["beta"].values[..., j], [0.025, 0.975])
        assert lo < true < hi
    # recovered spatial effects track the simulated ones
    w_hat = post["w"].mean(("chain", "draw")).values[sites.site_index]
    assert np.corrcoef(w_hat, sim["w"])[0, 1] > 0.9


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, bundled_release):
    # the first run is the session's shared one (conftest.bundled_release, same settings)
    out = tmp_path_factory.mktemp("e2e") / "b"
    assert main(["--quiet", "run", "--out", str(out), *LIGHT]) == 0
    return [bundled_release, out]


def test_outputs_and_record(two_runs):
    out = two_runs[0]
    for rel in ("release/implicates.parquet", "release/README.md",
                "release/csv/implicate_001.csv", "release/csv/implicate_020.csv",
                "confidential/posterior_restricted.nc", "confidential/posterior_unrestricted.nc",
                "confidential/synthesiser.nc",
                "confidential/risk_per_record.csv", "release.json", "report.html"):
        assert (out / rel).is_file(), rel
    rec = json.loads((out / "release.json").read_text())
    assert rec["n_records"] == 140
    assert rec["at_risk"]["M_m"] > 0
    assert rec["at_risk"]["n_at_risk"] >= 1, "the bundled subset must have at-risk records"
    assert rec["spec"]["sampling"]["draws"] == 300  # the spec as run, overrides included
    assert {r["model"] for r in rec["utility"]["table"]} == {"confidential", "unrestricted",
                                                             "restricted"}
    groups = {r["group"] for r in rec["risk_summary"]}
    assert {"at_risk", "other", "all"} <= groups
    html = (out / "report.html").read_text()
    assert html.splitlines()[0].startswith("<!-- CONFIDENTIAL")
    for needle in ("M (metres)", "within $10,000", "within 10%", "ci_overlap", "Intercept"):
        assert needle in html
    long = pq.read_table(out / "release/implicates.parquet").to_pandas()
    assert len(long) == 140 * 20 and long["implicate"].nunique() == 20
    # location diagnostics: summary in release.json, per-record k/labels in confidential/
    loc = rec["locations"]
    assert loc["moves_locations"] is False
    assert loc["spatial_k"]["radius_m"] == 100.0 and loc["spatial_k"]["n_records"] == 140
    assert loc["at_risk"]["n_at_risk"] == rec["at_risk"]["n_at_risk"]
    assert loc["at_risk"]["n_at_risk_below_k"] <= loc["at_risk"]["n_at_risk"]
    per_record = pd.read_csv(out / "confidential/locations_per_record.csv")
    assert len(per_record) == 140 and per_record["at_risk"].sum() == rec["at_risk"]["n_at_risk"]
    assert not (out / "release/locations_per_record.csv").exists()
    assert "Location diagnostics: spatial k and outlier policy" in html
    assert "none (diagnostics only)" in html  # the report says no location was moved


def test_release_holds_no_confidential_value(two_runs):
    """No true response (log-dollars) or price (dollars) appears anywhere in release/."""
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2")
    truths = np.concatenate([raw["log_price"].to_numpy(), raw["price_usd"].to_numpy(),
                             np.exp(raw["log_price"].to_numpy())])
    rel = two_runs[0] / "release"
    allowed = {"id", "lon", "lat", "sqft_living", "log_price", "implicate", "geometry"}
    long = pq.read_table(rel / "implicates.parquet").to_pandas()
    assert set(long.columns) <= allowed
    synth = long["log_price"].to_numpy()
    for values in (synth, np.exp(synth)):
        close = np.isclose(values[:, None], truths[None, :], rtol=1e-9, atol=0).any()
        assert not close
    text_truths = {f"{v}" for v in raw["log_price"]} | {str(v) for v in raw["price_usd"]}
    for f in sorted(rel.rglob("*")):
        if f.is_file():
            data = f.read_bytes()
            for t in text_truths:
                if len(t) > 6:  # short integers (prices like 100000) could collide with ids
                    assert t.encode() not in data, (f, t)
    for f in (rel / "csv").glob("*.csv"):
        df = pd.read_csv(f)
        assert set(df.columns) <= allowed
        assert "price_usd" not in df.columns and "beds" not in df.columns


def test_same_seed_identical_release_files(two_runs):
    a, b = two_runs
    files_a = sorted(p.relative_to(a) for p in (a / "release").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in (b / "release").rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) == 22
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_rerun_needs_overwrite(two_runs, capsys):
    out = two_runs[0]
    before = (out / "release.json").read_bytes()
    assert main(["run", "--out", str(out), *LIGHT]) != 0
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "release.json").read_bytes() == before
