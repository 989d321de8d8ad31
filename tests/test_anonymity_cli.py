"""``synthgeo kanon`` and ``synthgeo outliers`` on the real data sets (fast, in-process)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pytest

from synthgeo.locations import OutlierPolicy, apply_outlier_policy, measure_spatial_k
from synthgeo.cli.main import main
from synthgeo.io.points import load_points

# the project's shared real data sets live beside the repository (../shared/data; see its
# README for provenance); SYNTHGEO_SHARED_DATA points elsewhere
DATA = Path(os.environ.get("SYNTHGEO_SHARED_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))
MPLS = DATA / "minneapolis_police_stops_2017.csv"
LUCAS = DATA / "lucas_oh_house_sales.csv"
MPLS_ARGS = [str(MPLS), "--x", "lon", "--y", "lat", "--crs", "EPSG:4326", "--id-col", "idNum"]
LUCAS_ARGS = [str(LUCAS), "--x", "x_m", "--y", "y_m", "--crs", "EPSG:2834", "--id-col", "id"]

pytestmark = [
    pytest.mark.skipif(not MPLS.is_file() or not LUCAS.is_file(), reason="shared data missing"),
    pytest.mark.filterwarnings("ignore:1 exact duplicate row"),
]


@pytest.fixture(scope="module")
def mpls():
    return load_points(MPLS, x="lon", y="lat", crs="EPSG:4326", id_column="idNum")


def test_kanon_minneapolis_race_gender_100m(tmp_path, capsys, mpls):
    out = tmp_path / "k"
    assert main(["kanon", *MPLS_ARGS, "--radius-m", "100", "--group-by", "race,gender",
                 "--k", "5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    api = measure_spatial_k(mpls, 100.0, k=5, group_by=["race", "gender"])
    s = api.summary()
    assert "by race × gender (33 groups)" in text
    assert f"below k: {s['n_below_k']:,} ({s['share_below_k']:.1%})" in text
    assert "per-record k by race × gender" in text and "Black × Male" in text
    assert "worst offenders" in text
    per_record = pd.read_csv(out / "spatial_k.csv")
    assert len(per_record) == 51920
    np.testing.assert_array_equal(per_record["spatial_k"], api.spatial_k)
    rec = json.loads((out / "kanon.json").read_text())
    assert rec["summary"]["n_below_k"] == s["n_below_k"]
    assert rec["input"]["sha256"] == mpls.attrs["sha256"]
    assert sum(r["n_records"] for r in rec["histogram"]) == 51920
    layer = geopandas.read_parquet(out / "spatial_k.parquet")
    assert layer.crs.to_epsg() == 32615 and len(layer) == 51920
    worst = pd.read_csv(out / "worst_offenders.csv")
    assert (worst["spatial_k"].astype(str) == "1").all()
    # an existing folder is refused without --overwrite, nothing changes
    before = (out / "kanon.json").read_bytes()
    assert main(["kanon", *MPLS_ARGS, "--radius-m", "50", "--out", str(out)]) == 1
    assert "exists; pass `--overwrite`" in capsys.readouterr().err
    assert (out / "kanon.json").read_bytes() == before


def test_outliers_minneapolis_per_neighborhood_shares(tmp_path, capsys, mpls):
    out = tmp_path / "o"
    # groups up to 3 r_max wide (the default 1 r_max merges nothing: see the policy's docs)
    assert main(["outliers", *MPLS_ARGS, "--k", "5", "--r-max-m", "500", "--unit-col",
                 "neighborhood", "--keep", "race,gender", "--out", str(out),
                 "--group-diameter-ratio", "3"]) == 0
    text = capsys.readouterr().out
    api = apply_outlier_policy(mpls, OutlierPolicy(k=5, r_max_m=500.0, group_diameter_ratio=3),
                               unit="neighborhood")
    assert "suppression share per neighborhood (87 units" in text
    assert f"suppressed: {api.overall['n_suppressed']:,} of 51,920" in text
    assert "passes:" in text and "fixed point" in text
    units = pd.read_csv(out / "units.csv")
    assert len(units) == 87 and units["n_records"].sum() == 51920
    labels = pd.read_csv(out / "labels.csv")
    assert (labels["label"] == api.label).all()
    disposed = pd.read_csv(out / "disposed.csv")
    assert set(disposed.columns) == {"idNum", "neighborhood", "race", "gender", "disposal",
                                     "cell_size_m", "x", "y"}
    assert len(disposed) == 51920 - api.overall["n_suppressed"]
    # merged records are published at their group centroid, not where they were
    moved = disposed["disposal"] == "merged"
    truth = pd.read_csv(MPLS).set_index("idNum").loc[disposed.loc[moved, "idNum"]]
    assert moved.sum() == (api.disposal == "merged").sum() > 0
    assert (np.abs(truth["lon"].to_numpy() - disposed.loc[moved, "x"].to_numpy()) > 1e-6).all()
    rec = json.loads((out / "outliers.json").read_text())
    assert rec["labels"] == api.label_counts() and rec["converged"]
    # issue 23: the widest disposal, against r_max, on the terminal and in the record
    assert api.widest_disposal_line() in text and "widest disposal: merge group" in text
    assert rec["widest_disposal"]["space"] == api.widest_disposal("space")
    assert rec["widest_disposal"]["space"]["within_r_max"]
    # the bias table compares attributes, never the coordinate columns (break-it finding)
    assert not {"lon", "lat"} & set(pd.read_csv(out / "bias.csv")["attribute"])


def test_outliers_minneapolis_temporal(capsys):
    # 3 h (was 1 h): since issue 23 no time bin may reach beyond r_max_time of a stop, and at
    # 1 h the 1,166 stops that found none are suppressed (2.25 %, over the 1 % cap)
    assert main(["outliers", *MPLS_ARGS, "--k", "5", "--r-max-m", "500", "--unit-col",
                 "neighborhood", "--time-col", "datetime_utc", "--r-max-time", "3h",
                 "--group-diameter-ratio", "3"]) == 0
    text = capsys.readouterr().out
    assert "disposals (time):" in text and "merge groups (time)" in text
    assert "widest disposal in time: interval" in text or \
        "widest disposal in time: merge group" in text
    assert main(["outliers", *MPLS_ARGS, "--k", "5", "--r-max-m", "500", "--time-col",
                 "datetime_utc"]) == 1
    assert "`--time-col` and `--r-max-time` go together" in capsys.readouterr().err


def test_lucas_kanon_and_a_refusing_policy(tmp_path, capsys):
    assert main(["kanon", *LUCAS_ARGS, "--radius-m", "100", "--k", "5"]) == 0
    text = capsys.readouterr().out
    assert "25,357 records" in text and "location only" in text
    out = tmp_path / "refused"
    rc = main(["outliers", *LUCAS_ARGS, "--k", "5", "--r-max-m", "100", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert "exceeds `max_suppressed_share` = 1.00%" in err and "raise `r_max_m`" in err
    assert not out.exists()  # refused: nothing written
    # report mode writes the record and labels but no disposed layer
    assert main(["outliers", *LUCAS_ARGS, "--k", "5", "--r-max-m", "100", "--on-breach",
                 "report", "--out", str(out)]) == 0
    assert (out / "labels.csv").is_file() and not (out / "disposed.parquet").exists()
    assert json.loads((out / "outliers.json").read_text())["refused"] is True


def test_cli_input_errors(capsys, tmp_path):
    assert main(["kanon", str(MPLS), "--radius-m", "100"]) == 1
    assert "needs `x` and `y` column names" in capsys.readouterr().err
    assert main(["kanon", str(MPLS), "--x", "lon", "--y", "lat", "--radius-m", "100"]) == 1
    assert "has no CRS" in capsys.readouterr().err
    assert main(["kanon", *MPLS_ARGS, "--radius-m", "100", "--target-crs", "EPSG:3857"]) == 1
    assert "Web Mercator" in capsys.readouterr().err
    assert main(["kanon", *MPLS_ARGS, "--radius-m", "100", "--group-by", "colour"]) == 1
    assert "['colour'] not found" in capsys.readouterr().err
    assert main(["outliers", *MPLS_ARGS, "--k", "1", "--r-max-m", "500"]) == 1
    assert "`k` must be an integer >= 2" in capsys.readouterr().err
    assert main(["outliers", *MPLS_ARGS, "--k", "5", "--r-max-m", "500", "--time-col",
                 "datetime_utc", "--r-max-time", "6"]) == 1
    assert "duration with a unit" in capsys.readouterr().err
    assert main(["kanon", "--help"]) == 0
    helptext = capsys.readouterr().out
    assert "metres" in helptext and "default: 5" in helptext
