"""The paper's simulated study: bundled data, three-model comparison, spatial utility."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from synthgeo._errors import SpecError
from synthgeo.config import load_spec
from synthgeo.studies.simulation import PAPER_SEED, paper_design_csv
from synthgeo.utility.spatial import knn_weights, morans_i, semivariogram

ROOT = Path(__file__).resolve().parents[1]
PAPER_SPEC = ROOT / "models" / "paper_simulation.toml"


def test_bundled_paper_data_regenerates():
    """The shipped file is what the seeded simulation makes.

    Byte for byte under the library versions it was written with; the last digit of a
    simulated value follows numpy/SciPy's arithmetic (the Cholesky factor), so the check is
    exact on every text and integer column and on the coordinates, and to 1e-12 relative on
    the simulated values.
    """
    import io

    shipped = (resources.files("synthgeo") / "data" / "paper_simulation.csv").read_bytes()
    made = paper_design_csv(PAPER_SEED)
    a, b = pd.read_csv(io.StringIO(made)), pd.read_csv(io.BytesIO(shipped))
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    for col in a.columns:
        if a[col].dtype.kind == "f" and col not in ("x_m", "y_m"):
            np.testing.assert_allclose(a[col], b[col], rtol=1e-12, atol=1e-12, err_msg=col)
        else:
            pd.testing.assert_series_equal(a[col], b[col])
    frame = pd.read_csv(ROOT / "src" / "synthgeo" / "data" / "paper_simulation.csv")
    xy = frame[["x_m", "y_m"]].to_numpy()
    out = frame.index[frame["is_outlier"]][0]
    assert tuple(xy[out]) == (510.0, 10.0)
    gap = np.delete(np.linalg.norm(xy - xy[out], axis=1), out).min()
    assert gap > 260.0  # "more than 0.26 from all others"


def test_semivariogram_matches_brute_force():
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 100, (60, 2))
    z = rng.standard_normal((3, 60))
    sv = semivariogram(xy, z, max_lag_m=50.0, n_bins=5)
    d = cdist(xy, xy)
    iu = np.triu_indices(60, 1)
    h = d[iu]
    for _, row in sv.iterrows():
        b = int(row["bin"])
        sel = (h > 10 * b) & (h <= 10 * (b + 1)) if b else (h > 0) & (h <= 10)
        assert row["n_pairs"] == sel.sum()
        for k in range(3):
            diff = (z[k][iu[0]] - z[k][iu[1]])[sel]
            assert row[f"gamma_{k}"] == pytest.approx(0.5 * np.mean(diff**2))


def test_morans_i_matches_formula_and_known_patterns():
    rng = np.random.default_rng(2)
    xy = rng.uniform(0, 100, (50, 2))
    z = rng.standard_normal(50)
    W = knn_weights(xy, 4)
    Wd = W.toarray()
    assert np.allclose(Wd.sum(axis=1), 1) and np.all(np.diag(Wd) == 0)
    zc = z - z.mean()
    want = 50 / Wd.sum() * zc @ Wd @ zc / (zc @ zc)
    assert morans_i(z, W) == pytest.approx(want)
    # a smooth trend is strongly autocorrelated; two rows at once
    both = morans_i(np.stack([xy[:, 0], z]), W)
    assert both[0] > 0.8 and both[1] == pytest.approx(want)


@pytest.fixture(scope="module")
def paper_comparison():
    from synthgeo.studies.compare import compare_models

    return compare_models(load_spec(PAPER_SPEC))


def test_paper_design_outlier_risk_falls_and_intercept_interval_overlaps(paper_comparison):
    """Issue 4's numbers: the outlier's within-10% risk falls by >= 70% under the restricted
    model, and the Reiter interval of the analyst's intercept overlaps the confidential OLS one."""
    r = paper_comparison
    rel = r.release
    out = int(np.flatnonzero(rel.data.record_id == 500)[0])  # the isolated record
    assert rel.at_risk.at_risk[out]
    risk_u = float(rel.risk["unrestricted"].per_record["risk_rel"].values[out, 0])
    risk_r = float(rel.risk["restricted"].per_record["risk_rel"].values[out, 0])
    assert risk_u > 0.1
    assert 1 - risk_r / risk_u >= 0.70
    util = r.utility.set_index(["model", "term"])
    conf = util.loc[("confidential", "Intercept")]
    res = util.loc[("restricted", "Intercept")]
    assert res["lower"] < conf["upper"] and conf["lower"] < res["upper"]
    assert res["ci_overlap"] > 0.9


def test_paper_design_pattern(paper_comparison):
    """Unrestricted synthetic values centred on the outlier's truth, restricted near β₀;
    β₀ falls and τ² rises under the restricted model (paper, Table 1)."""
    r = paper_comparison
    post = r.posterior.set_index(["model", "parameter"])["mean"]
    assert post[("restricted", "beta[Intercept]")] < post[("unrestricted", "beta[Intercept]")] - 0.3
    assert post[("restricted", "tau2")] > 1.5 * post[("unrestricted", "tau2")]
    row = r.at_risk_records.set_index("record").loc[500]
    assert abs(row["unrestricted_mean"] - row["truth"]) < 0.3
    assert abs(row["restricted_mean"] - post[("restricted", "beta[Intercept]")]) < 0.5
    assert row["restricted_mean"] - row["truth"] > 2.0
    risk = r.risk.set_index(["group", "measure", "model"])
    assert risk.loc[("at_risk", "within 10%", "suppressed"), "n_released"] == 0
    assert risk.loc[("at_risk", "within 10%", "suppressed"), "reduction"] == 1.0
    mi = r.spatial["morans_i"].set_index("model")
    for m in ("unrestricted", "restricted", "suppressed"):
        assert mi.loc[m, "q05"] - 0.05 < mi.loc[m, "confidential"] < mi.loc[m, "q95"] + 0.05
    # the comparison prints no pMSE, so its release skips the general utility (3 s of 15)
    assert r.release.general_utility is None and "general_utility" not in r.release.seconds


def test_write_comparison_is_atomic_and_refuses_existing(paper_comparison, tmp_path):
    from synthgeo.studies.compare import write_comparison

    out = write_comparison(paper_comparison, tmp_path / "cmp")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["at_risk_records.csv", "comparison.json", "local_means.csv", "morans_i.csv",
                     "posterior.csv",
                     "risk.csv", "semivariogram.csv", "utility.csv"]
    with pytest.raises(SpecError, match="exists; pass `--overwrite`"):
        write_comparison(paper_comparison, out)
    write_comparison(paper_comparison, out, overwrite=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("keep")
    with pytest.raises(SpecError, match="holds no comparison.json"):
        write_comparison(paper_comparison, other, overwrite=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cli_compare_help_and_refusals(tmp_path, capsys):
    from synthgeo.cli.main import main

    assert main(["compare", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--frontier" in text and "metres" in text and "--out DIR" in text
    out = tmp_path / "exists"
    out.mkdir()
    assert main(["compare", str(PAPER_SPEC), "--out", str(out)]) != 0
    assert "exists; pass `--overwrite`" in capsys.readouterr().err
    assert main(["compare", str(PAPER_SPEC), "--implicates", "1"]) != 0
    assert "`--implicates 1` is invalid" in capsys.readouterr().err


def test_frontier_rows_and_plot(tmp_path):
    from synthgeo.studies.frontier import risk_utility_frontier

    spec = load_spec(PAPER_SPEC).replace("synthesis", n_implicates=40)
    fr = risk_utility_frontier(spec, gammas=(0.0, "inf"), rho0s=(0.2,))
    t = fr.table.set_index("gamma")
    assert list(t.index) == ["0.0", "inf"]
    assert (t["n_at_risk"] == 2).all()
    # gamma = inf removes the at-risk effects: their risk falls; gamma = 0 is the same model
    assert t.loc["inf", "reduction_at_risk"] > 0.7
    assert t.loc["inf", "reduction_at_risk"] > t.loc["0.0", "reduction_at_risk"] + 0.4
    assert (t["mean_ci_overlap"] > 0.9).all()
    fr.plot(tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_local_means_match_hand_computed_cells():
    from synthgeo.utility.spatial import local_means

    xy = np.array([[1, 1], [2, 3], [4, 4], [11, 1], [12, 2], [15, 9], [25, 5.0]])
    z = np.array([1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 7.0])
    lm = local_means(xy, z, cell_m=10.0, min_records=2, origin_m=(0.0, 0.0))
    assert lm[["cell_x", "cell_y", "n_records"]].values.tolist() == [[0, 0, 3], [1, 0, 3]]
    np.testing.assert_allclose(lm["mean"], [2.0, 20.0])
    two = local_means(xy, np.stack([z, 2 * z]), cell_m=10.0, min_records=2, origin_m=(0, 0))
    np.testing.assert_allclose(two["mean_1"], [4.0, 40.0])
