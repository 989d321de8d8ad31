"""One home per cross-cutting helper: JSON sanitiser, file hasher, frame hash, atomic writer,
provenance builder (synthgeo.io.jsonable / provenance / atomic).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest

from synthgeo import SpecError
from synthgeo.io.atomic import write_folder
from synthgeo.io.jsonable import dumps, jsonable
from synthgeo.io.provenance import (
    INPUT_KEYS,
    file_sha256,
    frame_sha256,
    input_record,
    provenance,
)

# --- JSON --------------------------------------------------------------------------------------


def test_jsonable_keeps_the_sign_of_infinity_and_nulls_nan():
    rec = {"gamma": math.inf, "lower": -np.inf, "nan": np.float32("nan"),
           "n": np.int64(3), "ok": np.bool_(True), "xs": np.array([1.5, -np.inf]),
           "t": (1, 2.5), "p": Path("/a/b"), 7: "seven"}
    assert jsonable(rec) == {"gamma": "inf", "lower": "-inf", "nan": None, "n": 3, "ok": True,
                             "xs": [1.5, "-inf"], "t": [1, 2.5], "p": "/a/b", "7": "seven"}
    assert type(jsonable(np.float64(0.25))) is float and type(jsonable(np.int32(2))) is int
    text = dumps({"a": [np.nan, np.inf, -np.inf]}, indent=None)
    assert text == '{"a": [null, "inf", "-inf"]}'
    assert json.loads(text)  # valid JSON: no NaN / Infinity tokens


def test_every_record_writer_uses_the_one_sanitiser(tmp_path):
    # kanon/outliers/comparison (write_folder's JSON) and mask/choose-k/release (dumps)
    out = write_folder(tmp_path / "o", {"r.json": {"low": -math.inf}}, marker="r.json")
    assert json.loads((out / "r.json").read_text()) == {"low": "-inf"}


# --- hashing -----------------------------------------------------------------------------------


def test_file_sha256_is_sha256_of_the_bytes(tmp_path):
    f = tmp_path / "x.bin"
    data = bytes(range(256)) * 5000  # > one read block
    f.write_bytes(data)
    assert file_sha256(f) == hashlib.sha256(data).hexdigest()
    with pytest.raises(FileNotFoundError):
        file_sha256(tmp_path / "missing")


def _chunk(b: bytes) -> bytes:
    return len(b).to_bytes(8, "little") + b


def _point_wkb(x: float, y: float) -> bytes:
    return b"\x01" + (1).to_bytes(4, "little") + struct.pack("<dd", x, y)  # ISO, little-endian


@pytest.fixture
def tiny() -> geopandas.GeoDataFrame:
    return geopandas.GeoDataFrame({"b": [1.5, np.nan], "a": ["x", None]},
                                  geometry=geopandas.points_from_xy([1.0, 3.0], [2.0, 4.0]),
                                  crs="EPSG:32610")


def test_frame_sha256_follows_its_written_definition(tiny):
    wkt = pyproj.CRS.from_epsg(32610).to_wkt().encode()
    wkb = _point_wkb(1.0, 2.0) + _point_wkb(3.0, 4.0)
    stream = b"".join(_chunk(c) for c in [
        b"synthgeo-frame/1", (2).to_bytes(8, "little"),
        b"a", b"object", struct.pack("<qq", 5, -1), b"str:x",  # a list: lengths, then items
        b"b", b"float64", struct.pack("<dd", 1.5, math.nan),
        b"geometry", b"geometry", wkt, struct.pack("<qq", 21, 21), wkb,
    ])
    assert frame_sha256(tiny) == hashlib.sha256(stream).hexdigest()


def test_frame_sha256_sees_data_not_layout(tiny):
    h = frame_sha256(tiny)
    assert frame_sha256(tiny[["geometry", "a", "b"]]) == h  # column order
    assert frame_sha256(tiny.set_axis([10, 11])) == h  # index
    odd_nan = np.frombuffer(struct.pack("<Q", 0x7FF8000000000001), "<f8")[0]
    assert frame_sha256(tiny.assign(b=[1.5, odd_nan])) == h  # NaN payload
    assert frame_sha256(tiny.astype({"a": object})) == h  # pandas' `str` vs `object` text
    assert frame_sha256(tiny.astype({"a": "category"})) == h
    tiny.attrs["sha256"] = "x"
    assert frame_sha256(tiny) == h  # attrs
    assert frame_sha256(tiny.assign(b=[1.5, 2.0])) != h  # a value
    assert frame_sha256(tiny.assign(b=["1.5", None])) != h  # text vs number
    assert frame_sha256(tiny.assign(a=["x", "None"])) != h  # missing vs the text "None"
    assert frame_sha256(tiny.set_crs(32611, allow_override=True)) != h  # the CRS
    assert frame_sha256(tiny.iloc[::-1]) != h  # row order is the record order
    moved = tiny.set_geometry(geopandas.points_from_xy([1.0, 3.0], [2.0, 4.5], crs=32610))
    assert frame_sha256(moved) != h  # a location
    assert frame_sha256(tiny.rename(columns={"a": "c"})) != h  # a name
    ints = pd.DataFrame({"n": [1, 2]})
    assert frame_sha256(ints) != frame_sha256(ints.astype("float64"))  # the dtype


# --- atomic writer -----------------------------------------------------------------------------


def test_write_folder_writes_all_or_nothing(tmp_path):
    out = tmp_path / "out"
    done = write_folder(out, {"a.txt": "A", "sub/b.bin": b"\x00\x01", "r.json": [1, math.nan],
                              "c.csv": lambda p: p.write_text("x\n1\n")}, marker="r.json")
    assert done == out.resolve()
    assert (out / "a.txt").read_text() == "A" and (out / "sub/b.bin").read_bytes() == b"\x00\x01"
    assert json.loads((out / "r.json").read_text()) == [1, None]

    def boom(path):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_folder(out, {"a.txt": "new", "c.csv": boom}, marker="r.json", overwrite=True)
    assert (out / "a.txt").read_text() == "A"  # the earlier folder is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder left
    with pytest.raises(SpecError, match="exists; pass `--overwrite`"):
        write_folder(out, {"a.txt": "x"}, marker="r.json")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "mine.txt").write_text("keep")
    with pytest.raises(SpecError, match="holds no r.json"):
        write_folder(tmp_path / "foreign", {"a.txt": "x"}, marker="r.json", overwrite=True)


# --- provenance ----------------------------------------------------------------------------------


def test_provenance_blocks(tiny, tmp_path):
    rec = provenance("kanon", points=tiny, path="pts.csv", query="b > 0")
    assert list(rec) == ["command", "created_at", "input", "crs", "warnings", "versions"]
    assert rec["command"] == "synthgeo kanon"
    assert tuple(rec["input"]) == INPUT_KEYS
    assert rec["input"]["path"] == str(Path("pts.csv").absolute())
    assert rec["input"]["query"] == "b > 0"
    assert rec["input"]["frame_sha256"] == frame_sha256(tiny)
    assert rec["crs"]["projected"] == "WGS 84 / UTM zone 10N" and rec["crs"]["source"] is None
    assert rec["versions"]["synthgeo"]
    release = provenance(None, points=tiny)
    assert "command" not in release
    masks = provenance("mask", inputs={"cases": {"sha256": "0" * 64}})
    assert masks["inputs"] == {"cases": {"sha256": "0" * 64}} and "input" not in masks
    memory = input_record(tiny)
    assert memory["path"] is None and memory["sha256"] is None


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_an_out_where_no_folder_can_be_made_is_refused_before_any_work(tmp_path, capsys):
    """Break-it: `run --out /proc/x` ran the pipeline, then failed with a raw [Errno 2]."""
    from synthgeo.cli.main import main
    from synthgeo.io.atomic import check_output_dir

    for out in ("/proc/x", "/proc/a/b"):
        with pytest.raises(SpecError, match=r"^`--out` '/proc/[ab/x]+': a folder cannot be "
                                            r"created in '/proc' \(.+\); choose another"):
            check_output_dir(out, marker="r.json", overwrite=False)
    (tmp_path / "f").write_text("a file")
    with pytest.raises(SpecError, match=r"'.*/f' is not a folder; choose another `--out`"):
        check_output_dir(tmp_path / "f" / "a" / "out", marker="r.json", overwrite=False)
    # the probe is removed; a new nested --out is still fine (its parents are made on writing)
    assert check_output_dir(tmp_path / "n" / "out", marker="r.json", overwrite=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
    assert main(["run", "--out", "/proc/x", "--progress", "never"]) == 1
    err = capsys.readouterr()
    assert err.err.count("\n") == 1 and "a folder cannot be created in '/proc'" in err.err
    assert "fitting" not in err.out + err.err and "Errno" not in err.err
