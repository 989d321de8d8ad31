"""Records repeating another in every column but the id are refused above 1 % of the file.

Break-it trial 2026-12-07: the bundled sales doubled under new ids released with one warning
(location M 5,506 -> 534 m, release attacker largest attributable risk 0.447 -> 0.999).
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from synthgeo import InputError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import prepare_data


def _doubled(tmp_path, share=1.0):
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2")
    copies = raw.sample(frac=share, random_state=0).copy()
    copies["id"] = copies["id"] + 10_000
    path = tmp_path / "doubled.csv"
    pd.concat([raw, copies]).to_csv(path, index=False)
    return spec.replace("data", path=str(path))


def _prepare(spec, points=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prepare_data(spec, points)


def test_a_doubled_file_is_refused_naming_the_count_and_the_options(tmp_path):
    spec = _doubled(tmp_path)
    with pytest.raises(InputError) as info:
        _prepare(spec)
    msg = str(info.value)
    assert "141 of 280 records repeat another in location and every column but the id" in msg
    assert "accept_repeated_records = true" in msg and "drop_duplicates = true" in msg
    assert "\n" not in msg


def test_dropped_or_accepted_repeats_go_on_and_acceptance_is_recorded(tmp_path):
    spec = _doubled(tmp_path)
    dropped = _prepare(spec.replace("data", drop_duplicates=True))
    assert dropped.n_records == 139  # the file's own duplicate pair is dropped too
    kept = _prepare(spec.replace("data", accept_repeated_records=True))
    assert kept.n_records == 280
    codes = [w["code"] for w in kept.gdf.attrs["warnings"]]
    assert "repeated_records_accepted" in codes and "exact_duplicates" in codes


def test_the_bundled_files_one_pair_passes_and_a_frame_in_memory_is_refused(tmp_path):
    spec = load_spec(bundled_spec_path())
    assert _prepare(spec).n_records == 140  # one pair of 140: 0.7 %, below the bound
    doubled = _doubled(tmp_path, share=0.05)  # 7 more of 147: 5.4 %
    pts = _prepare(doubled.replace("data", accept_repeated_records=True)).gdf
    pts = pts.drop(columns=[c for c in pts.columns if c.startswith("__")])
    with pytest.raises(InputError, match=r"8 of 147 records .* drop them first, or set "
                                         r"`\[data\] accept_repeated_records = true`"):
        _prepare(spec.replace("data", path=None, query=None), pts)


def test_rows_identical_id_included_are_named_so(tmp_path):
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2")
    path = tmp_path / "twice.csv"
    pd.concat([raw, raw.head(3)]).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"id column `id` is not unique: .*; 3 of them repeat "
                                         r"an earlier row in every column, id included"):
        _prepare(spec.replace("data", path=str(path)))


def test_acceptance_reaches_release_json_and_the_report(tmp_path):
    from synthgeo.release.report import render_report
    from synthgeo.release.writer import write_release
    from synthgeo.testing import fake_release_result

    spec = _doubled(tmp_path, share=0.05).replace("data", accept_repeated_records=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fake_release_result(spec, n_draws=60, n_implicates=3)
        html = render_report(res)
        write_release(res, tmp_path / "out")
    assert "repeated_records_accepted" in html and "8 of 147 records repeat another" in html
    record = json.loads((tmp_path / "out" / "release.json").read_text())
    assert record["spec"]["data"]["accept_repeated_records"] is True
    hits = [w for w in record["warnings"] if w["code"] == "repeated_records_accepted"]
    assert len(hits) == 1 and "8 of 147 records repeat another" in hits[0]["message"]


def test_kanon_refuses_the_same_way_and_offers_both_options(tmp_path, capsys):
    from synthgeo.cli.main import main

    spec = _doubled(tmp_path)
    args = ["kanon", spec.data.path, "--x", "lon", "--y", "lat", "--crs", "EPSG:4326",
            "--id-col", "id", "--query", "beds == 2", "--radius-m", "100"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "141 of 280 records repeat another" in err
    assert "--drop-duplicates" in err and "--accept-repeated-records" in err
    assert main([*args, "--drop-duplicates"]) == 0
    assert "139 records" in capsys.readouterr().out
    out = tmp_path / "k"
    assert main([*args, "--accept-repeated-records", "--out", str(out)]) == 0
    record = json.loads((out / "kanon.json").read_text())
    assert [w["code"] for w in record["warnings"]].count("repeated_records_accepted") == 1
    text = next(w for w in record["warnings"] if w["code"] == "repeated_records_accepted")
    # kanon fits and releases nothing, and its option is a flag (second break-it trial)
    assert "--accept-repeated-records: counted as distinct records in spatial k" in str(text)
    assert "released" not in str(text)

