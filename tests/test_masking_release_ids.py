"""synthgeo mask publishes release pseudonyms in a random row order, never the case ids or order.

Break-it trial 2026-12-07: ``release/masked.csv`` kept the input ids and the file's row order;
with a cases file sorted by easting the order alone raised the attacker over all households
from 0.207 to 0.262 (k = 20).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import synthgeo
from synthgeo.cli.main import main
from synthgeo.masking import read_mask

DATA = Path(synthgeo.__file__).parent / "data"
SEED = "8146239057112233"


@pytest.fixture(scope="module")
def sorted_cases(tmp_path_factory) -> Path:
    """Chorley's cases and households, the file sorted by easting (ids in another order)."""
    frame = pd.read_csv(DATA / "chorley_ribble_cancer.csv").sort_values("x_km", kind="stable")
    path = tmp_path_factory.mktemp("in") / "by_easting.csv"
    frame.to_csv(path, index=False)
    return path


def argv(cases: Path, out: Path, *extra: str, seed: str = SEED) -> list[str]:
    return ["--quiet", "mask", str(cases), "--households", str(cases), "--x", "x_km", "--y",
            "y_km", "--crs", "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id",
            "--cases-query", "cancer == 'larynx'", "--households-query", "cancer == 'lung'",
            "--region", "synthgeo:chorley_ribble_window.csv", "--k", "20", "--seed", seed,
            "--n-attacks", "20", "--out", str(out), *extra]


def true_cases(cases: Path) -> pd.DataFrame:
    return pd.read_csv(cases).query("cancer == 'larynx'").set_index("id")


def test_published_ids_are_pseudonyms_in_a_random_order(sorted_cases, tmp_path):
    out = tmp_path / "m"
    assert main(argv(sorted_cases, out)) == 0
    true = true_cases(sorted_cases)
    table = pd.read_csv(out / "release" / "masked.csv")
    # the published ids are 1..n in published order, not the case ids
    assert table["id"].tolist() == list(range(1, 59))
    id_map = pd.read_csv(out / "release_ids.csv")  # confidential: beside mask.json
    assert id_map["release_id"].tolist() == list(range(1, 59))
    assert sorted(id_map["id"]) == sorted(true.index)
    assert not (id_map["id"].to_numpy() == id_map["release_id"].to_numpy()).all()
    # the published order is not the file's (sorted by easting; rank correlation 1)
    east = true.loc[id_map["id"], "x_km"].to_numpy()
    assert abs(spearmanr(np.arange(58), east).statistic) < 0.5
    assert spearmanr(np.arange(58), true["x_km"].to_numpy()).statistic > 0.99  # the file's
    # nothing in release/ names a case id or the map
    public = json.loads((out / "release" / "masking.json").read_text())
    assert public["ids"].startswith("release pseudonyms 1..n in a random row order")
    assert sorted(p.name for p in (out / "release").iterdir()) == [
        "masked.csv", "masked.parquet", "masking.json"]
    side = json.loads((out / "mask.json").read_text())
    assert side["release_ids"] == "pseudonymous" and "release_ids.csv" in side["files"]
    assert "release_ids_warning" not in side
    # read_mask maps the pseudonyms back: each case's point within r_k of its true location
    layer, _ = read_mask(out)
    assert layer.attrs["release_ids"] == "pseudonymous"
    assert layer["id"].tolist() == id_map["id"].tolist()
    t = true.loc[layer["id"]]
    d = np.hypot(layer.geometry.x.to_numpy() - t["x_km"].to_numpy() * 1000,
                 layer.geometry.y.to_numpy() - t["y_km"].to_numpy() * 1000)
    assert np.median(d) == pytest.approx(side["evaluation"]["median_displacement_m"])
    # a tampered map is refused (its sha256 is in mask.json)
    (out / "release_ids.csv").write_text(id_map.iloc[::-1].to_csv(index=False))
    with pytest.raises(synthgeo.InputError, match="release_ids.csv changed since"):
        read_mask(out)


def test_reuse_carries_points_over_by_case_id(sorted_cases, tmp_path):
    first, later = tmp_path / "first", tmp_path / "later"
    assert main(argv(sorted_cases, first)) == 0
    assert main(argv(sorted_cases, later, "--reuse", str(first), seed="9" * 17)) == 0
    side = json.loads((later / "mask.json").read_text())
    assert side["n_reused"] == 58
    a, _ = read_mask(first)
    b, _ = read_mask(later)
    a, b = a.set_index("id").sort_index(), b.set_index("id").sort_index()
    assert a.geometry.geom_equals(b.geometry).all()
    # a fresh pseudonym order for the later release (its own seed)
    assert not (pd.read_csv(first / "release_ids.csv")["id"].to_numpy()
                == pd.read_csv(later / "release_ids.csv")["id"].to_numpy()).all()


def test_original_ids_are_an_explicit_option_with_a_warning(sorted_cases, tmp_path, capsys):
    out = tmp_path / "orig"
    assert main(argv(sorted_cases, out, "--release-ids", "original")) == 0
    err = capsys.readouterr().err
    assert "synthgeo: warning: the published layer carries the case ids as given" in err
    true = true_cases(sorted_cases)
    table = pd.read_csv(out / "release" / "masked.csv")
    assert sorted(table["id"]) == sorted(true.index)
    assert abs(spearmanr(np.arange(58), true.loc[table["id"], "x_km"]).statistic) < 0.5
    assert not (out / "release_ids.csv").exists()
    side = json.loads((out / "mask.json").read_text())
    assert side["release_ids"] == "original"
    assert side["release_ids_warning"].startswith("the published layer carries the case ids")
    assert json.loads((out / "release" / "masking.json").read_text())["ids"].startswith(
        "the case ids as given")
    # rerunning with the other setting does not silently reuse the folder
    assert main(argv(sorted_cases, out)) == 1
    msg = capsys.readouterr().err
    assert msg.count("\n") == 1 and "published with --release-ids original" in msg
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(argv(sorted_cases, out, "--release-ids", "original")) == 0  # reused as is
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
