"""synthgeo mask / choose-k on Chorley: outputs, reuse, determinism, refusals, --quiet."""

from __future__ import annotations

import json
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pytest

import synthgeo
from synthgeo.cli.main import main
from synthgeo.masking import mask_to_k, read_mask, reuse_previous_mask, write_mask

DATA = Path(synthgeo.__file__).parent / "data"
CHORLEY = str(DATA / "chorley_ribble_cancer.csv")
INPUTS = [CHORLEY, "--households", "synthgeo:chorley_ribble_cancer.csv", "--x", "x_km",
          "--y", "y_km", "--crs", "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id",
          "--cases-query", "cancer == 'larynx'", "--households-query", "cancer == 'lung'",
          "--region", "synthgeo:chorley_ribble_window.csv"]
SOURCE = ["--source", "354.5,413.6", "--radius-m", "2000"]
SEED = "8146239057112233"


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_choose_k_chorley(tmp_path, capsys):
    out = tmp_path / "ck"
    assert main(["choose-k", *INPUTS, *SOURCE, "--replicates", "20", "--out", str(out),
                 "--progress", "always"]) == 0
    cap = capsys.readouterr()
    assert "No method and k on the grid meets both targets" in cap.out
    assert "aggregated counts" in cap.out and "secure enclave" in cap.out
    assert "method  k  naive  aware  aware_hh  floor  stronger  detection  median_disp_m" in cap.out
    assert "4 cases within 2000 m vs 1.07 expected" in cap.out
    assert "choose-k" in cap.err  # the progress bar, on stderr
    assert sorted(files(out)) == ["choose_k.json", "choose_k.png", "sweep.csv"]
    rec = json.loads((out / "choose_k.json").read_text())
    assert rec["n_cases"] == 58 and rec["n_replicates"] == 20 and rec["chosen_k"] is None
    assert rec["inputs"]["households"]["n_points"] == 978
    assert rec["inputs"]["cases"]["sha256"] == rec["inputs"]["households"]["sha256"]
    assert rec["attacker"]["known_share"] == 0.3 and rec["attacker"]["n_known"] == 17
    assert rec["utility"]["radius_m"] == 2000 and rec["utility"]["source_xy_m"] == [354500,
                                                                                     413600]
    assert rec["targets"] == {"max_attacker_success": 0.05, "min_detection_rate": 0.8,
                              "rule": rec["targets"]["rule"]}
    assert [r["k"] for r in rec["sweep"]] == [5, 10, 15, 20, 30, 50] * 2
    assert [r["method"] for r in rec["sweep"]] == ["donut"] * 6 + ["areal"] * 6
    assert rec["alternatives"] and rec["urbanicity"]["n_dense"] == 31
    assert rec["chosen_method"] is None and "method_aware" in rec["attacker"]
    table = pd.read_csv(out / "sweep.csv")
    assert table["k"].tolist() == [5, 10, 15, 20, 30, 50] * 2
    # both attackers per method and k; the verdict uses the stronger, never below the floor
    assert (table["attacker_success"] >= table[["attacker_success_naive",
                                                "attacker_success_aware"]].max(axis=1)).all()
    assert np.allclose(table["guess_floor"], [max(1 / k, 1 / 17) for k in table["k"]])

    # same inputs and seed: byte-identical table and figure; refuse an existing folder
    again = tmp_path / "ck2"
    assert main(["--quiet", "choose-k", *INPUTS, *SOURCE, "--replicates", "20", "--out",
                 str(again)]) == 0
    cap = capsys.readouterr()
    assert "choose-k" not in cap.err and "%|" not in cap.err  # --quiet: no progress bar
    assert "No method and k on the grid" in cap.out  # the finding is the result: always printed
    a, b = files(out), files(again)
    assert a["sweep.csv"] == b["sweep.csv"] and a["choose_k.png"] == b["choose_k.png"]
    ra, rb = (json.loads(x["choose_k.json"]) for x in (a, b))
    for r in (ra, rb):
        r.pop("created_at"), r.pop("seconds")
    assert ra == rb
    assert main(["choose-k", *INPUTS, *SOURCE, "--replicates", "5", "--out", str(out)]) == 1
    assert "exists; pass `--overwrite`" in capsys.readouterr().err
    assert main(["choose-k", *INPUTS, *SOURCE, "--replicates", "5", "--out", str(out),
                 "--overwrite", "--quiet"]) == 0
    assert json.loads((out / "choose_k.json").read_text())["n_replicates"] == 5


def test_choose_k_refusals(tmp_path, capsys):
    def err(*argv):
        assert main(["choose-k", *argv, "--out", str(tmp_path / "x"), "--quiet"]) == 1
        msg = capsys.readouterr().err
        assert msg.startswith("synthgeo: error:") and msg.count("\n") == 1
        return msg

    no_crs = [a for a in INPUTS if a not in ("--crs", "EPSG:27700")]
    assert "has no CRS" in err(*no_crs, *SOURCE)
    assert "does not pass on the true locations (observed 0 vs 0.12 expected)" in err(
        *INPUTS, "--source", "354.5,413.6", "--radius-m", "1000")
    assert "`k_grid` = 2000 exceeds the 978 households" in err(*INPUTS, *SOURCE,
                                                               "--k-grid", "5,2000")
    assert "must be two numbers X,Y" in err(*INPUTS, "--source", "354.5", "--radius-m", "2000")
    assert "known_share" in err(*INPUTS, *SOURCE, "--known-share", "0")
    assert not (tmp_path / "x").exists()
    # a NaN coordinate in a case file: refused with the record id
    bad = tmp_path / "bad.csv"
    frame = pd.read_csv(CHORLEY)
    frame.loc[3, "x_km"] = np.nan
    frame.to_csv(bad, index=False)
    msg = err(str(bad), *INPUTS[1:], *SOURCE)
    assert "coordinate column `x_km` has 1 missing (NaN) value(s) at `id` [4]" in msg


def test_help_states_units_and_defaults(capsys):
    assert main(["choose-k", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("radius R around the source, metres", "(default: 200)",
                   "(default: 5,10,15,20,30,50)", "(default: 0.3)", "1000 for kilometres"):
        assert phrase in text
    assert main(["mask", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0.5 r_k and r_k metres" in text and "keep it confidential" in text


def test_mask_once_reuse_and_refuse(tmp_path, capsys):
    out = tmp_path / "m"
    argv = ["mask", *INPUTS, "--k", "20", "--seed", SEED, "--out", str(out), *SOURCE]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "58 cases masked to k = 20" in cap.out and "attacker success on this mask" in cap.out
    written = files(out)
    assert sorted(written) == ["mask.json", "release/masked.csv", "release/masked.parquet",
                               "release/masking.json", "release_ids.csv"]
    side = json.loads(written["mask.json"])
    assert side["random_seed"] == int(SEED) and side["k"] == 20
    assert side["evaluation"]["utility"]["observed_on_true_locations"] == 4
    # a k the attacker still beats is said so (break-it finding: "verified mask" beside 1.0)
    beaten = side["evaluation"]["attacker_success"] > 0.05
    assert ("warning: attacker success" in cap.out) == beaten
    public = json.loads(written["release/masking.json"])
    assert "random_seed" not in public and SEED not in written["release/masking.json"].decode()
    assert public["k"] == 20 and public["crs"] == "OSGB36 / British National Grid"
    layer, _ = read_mask(out)
    assert len(layer) == 58 and layer.crs.to_epsg() == 27700
    true = pd.read_csv(CHORLEY).query("cancer == 'larynx'").set_index("id").loc[layer["id"]]
    d = np.hypot(layer.geometry.x.to_numpy() - true.x_km.to_numpy() * 1000,
                 layer.geometry.y.to_numpy() - true.y_km.to_numpy() * 1000)
    assert (d > 0).all() and sorted(layer["id"]) == sorted(true.index)

    # rerun (same inputs and k; seed omitted or the same): reused, nothing rewritten
    for extra in ([], ["--seed", SEED]):
        assert main(["mask", *INPUTS, "--k", "20", "--out", str(out), *extra]) == 0
        assert "reusing the mask" in capsys.readouterr().out
        assert files(out) == written
    # another k (or seed) into the same folder: refused (averaging two masks)
    assert main(["mask", *INPUTS, "--k", "30", "--out", str(out)]) == 1
    assert "lets an attacker average the two" in capsys.readouterr().err
    # same inputs and seed into a new folder: byte-identical files
    twin = tmp_path / "twin"
    assert main(["mask", *INPUTS, "--k", "20", "--seed", SEED, "--out", str(twin), *SOURCE,
                 "--quiet"]) == 0
    assert files(twin) == written
    # a tampered release file is detected
    (out / "release" / "masked.csv").write_text("id,x_m,y_m\n")
    with pytest.raises(synthgeo.InputError, match="changed since the mask was written"):
        read_mask(out)


def test_mask_gpkg_deterministic_and_reuse_previous(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert main(["mask", *INPUTS, "--k", "10", "--seed", SEED, "--format", "gpkg",
                     "--out", str(out), "--quiet"]) == 0
    assert files(a) == files(b)
    layer, side = read_mask(a)
    assert side["layer"] == "release/masked.gpkg" and len(layer) == 58
    # a later release with the same cases keeps every earlier masked point
    later = tmp_path / "later"
    assert main(["mask", *INPUTS, "--k", "10", "--seed", "7", "--reuse", str(a),
                 "--out", str(later), "--quiet"]) == 0
    assert "synthgeo: warning: --seed 7 is short" in capsys.readouterr().err
    new, side2 = read_mask(later)
    assert side2["n_reused"] == 58 and side2["reused_from"]["k"] == 10
    new, layer = new.set_index("id").sort_index(), layer.set_index("id").sort_index()
    np.testing.assert_array_equal(new.geometry.x, layer.geometry.x)


def test_reuse_previous_mask_api():
    crs = "EPSG:27700"
    g = np.arange(0, 2000, 100.0)
    hh = geopandas.GeoSeries(geopandas.points_from_xy(*map(np.ravel, np.meshgrid(g, g))),
                             crs=crs)
    cases = geopandas.GeoDataFrame({"id": [1, 2, 3]}, crs=crs,
                                   geometry=geopandas.points_from_xy([500, 900, 1300],
                                                                     [500, 900, 1300]))
    cases.attrs["id_column"] = "id"
    first = mask_to_k(cases.iloc[:2], hh, k=8, random_seed=1)
    second = mask_to_k(cases, hh, k=8, random_seed=2)
    merged = reuse_previous_mask(second, first.masked, cases)
    assert merged.n_reused == 2
    assert merged.masked.geometry.iloc[:2].equals(first.masked.geometry)
    assert merged.masked.geometry.iloc[2].equals(second.masked.geometry.iloc[2])
    np.testing.assert_allclose(merged.displacement_m[:2], first.displacement_m)


def test_write_mask_refuses_foreign_folder(tmp_path):
    crs = "EPSG:27700"
    hh = geopandas.GeoSeries(geopandas.points_from_xy(np.arange(10.0), np.zeros(10)), crs=crs)
    m = mask_to_k(hh.iloc[:2], hh, k=3, random_seed=1)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(synthgeo.SpecError, match="holds no mask.json"):
        write_mask(m, tmp_path / "x", overwrite=True)
    assert (tmp_path / "x" / "notes.txt").read_text() == "mine"
    with pytest.raises(synthgeo.SpecError, match="file_format"):
        write_mask(m, tmp_path / "y", file_format="shp")
    assert not (tmp_path / "y").exists()


def test_mask_areal_reports_both_attackers_and_the_floor(tmp_path, capsys):
    out = tmp_path / "areal"
    assert main(["mask", *INPUTS, "--k", "20", "--method", "areal", "--seed", "123456789012",
                 "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "attacker success on this mask: naive" in cap.out
    assert "method-aware over all households" in cap.out and "random-guess floor" in cap.out
    assert "areal mask:" in cap.out and "households in the case's area" in cap.out
    side = json.loads((out / "mask.json").read_text())
    ev = side["evaluation"]
    both = ev["attackers"]
    assert ev["attacker_success"] == max(both[n]["success"] for n in
                                         ("naive", "aware_known_cases", "aware_households"))
    assert both["aware_households"]["success"] <= 1 / 20
    assert both["floor"] == pytest.approx(1 / 17)
    assert side["method"] == "areal" and ev["verified_k"]["min"] >= 20
    public = json.loads((out / "release" / "masking.json").read_text())
    assert public["method"].startswith("areal mask to k households")
    assert "co_located_records" in public


def test_mask_refuses_attacker_success_one_unless_accepted(tmp_path, capsys):
    """Break-it 2026-12-07: three cases masked at k = 5 were written with attacker success
    1.000 (naive, method-aware and over all households) under warnings only."""
    frame = pd.read_csv(CHORLEY)
    cases = tmp_path / "three.csv"
    frame.query("cancer == 'larynx'").head(3).to_csv(cases, index=False)
    args = ["mask", str(cases), "--households", CHORLEY, "--households-query",
            "cancer == 'lung'", "--x", "x_km", "--y", "y_km", "--crs", "EPSG:27700",
            "--coord-unit-m", "1000", "--id-col", "id", "--region",
            "synthgeo:chorley_ribble_window.csv", "--k", "5", "--seed", SEED]
    out = tmp_path / "m"
    assert main([*args, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "attacker success on this mask reads 1.000" in err
    assert "--accept-attacker-success-one" in err and "nothing was written" in err
    # three cases: the attacker knows one, so a larger k cannot help (second break-it trial)
    assert "guessing floor is 1.000 whatever k" in err and "larger k" not in err
    assert not out.exists()
    assert main([*args, "--out", str(out), "--accept-attacker-success-one"]) == 0
    assert "written under --accept-attacker-success-one" in capsys.readouterr().out
    side = json.loads((out / "mask.json").read_text())
    assert side["accepted"]["attacker_success_one"]["attacker_success"] == 1.0
    assert side["evaluation"]["attacker_success"] == 1.0
