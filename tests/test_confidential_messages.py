"""Refusals, warnings and log lines about the records never show a coordinate or a response.

Coordinates and responses are confidential: a message names counts, record ids (the id
column) and the option that fixes the input, never a value. Each case below plants values with
distinctive digits, triggers one check, and scans everything the check said (the exception,
its warnings and the log) for those digits.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyproj
import pytest

import synthgeo
from synthgeo._errors import InputError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.io.points import load_points
from synthgeo.pipeline import prepare_data

CHORLEY = Path(synthgeo.__file__).parent / "data" / "chorley_ribble_cancer.csv"


def _said(caplog, call) -> str:
    """Everything `call` said: its exception's text, its warnings and the log lines."""
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError) as err:
            call()
    return "\n".join([str(err.value), *(str(w.message) for w in caught),
                      *(r.getMessage() for r in caplog.records)])


def _forms(values) -> list[str]:
    """How a value could be printed: a few significant-digit renderings of each."""
    out = []
    for v in np.ravel(values):
        out += [f"{v:.4g}", f"{v:.5g}", f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3f}"]
    return out


def _assert_silent(text: str, values) -> None:
    leaked = [f for f in _forms(values) if f in text]
    assert not leaked, f"confidential value(s) {leaked} in the message: {text}"


def _lonlat(n: int = 12) -> pd.DataFrame:
    i = np.arange(n)
    return pd.DataFrame({"id": 100 + i, "lon": -121.4371 + 0.0013 * i,
                         "lat": 38.5419 + 0.0007 * i, "price": 1000.0 * (i + 1)})


def test_swapped_lat_lon(tmp_path, caplog):
    frame = _lonlat().rename(columns={"lon": "lat", "lat": "lon"})  # lat now -121..: swapped
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    text = _said(caplog, lambda: load_points(path, x="lon", y="lat", crs="EPSG:4326",
                                             id_column="id"))
    assert "`id` [100, 101, 102, 103, 104], ..." in text and "12 of 12 points" in text
    _assert_silent(text, frame[["lon", "lat"]].to_numpy())


def test_degrees_given_a_utm_crs(tmp_path, caplog):
    frame = _lonlat().rename(columns={"lon": "east", "lat": "north"})
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    text = _said(caplog, lambda: load_points(path, x="east", y="north", crs="EPSG:32610",
                                             id_column="id"))
    assert "`id` [" in text
    _assert_silent(text, frame[["east", "north"]].to_numpy())


def test_one_impossible_projected_value(tmp_path, caplog):
    t = pyproj.Transformer.from_crs(4326, 32610, always_xy=True)
    x, y = t.transform(-121.5 + 0.01 * np.arange(12), 38.5 + 0.005 * np.arange(12))
    frame = pd.DataFrame({"id": range(12), "x": x, "y": y})
    frame.loc[5, "x"] = 9_876_543.21
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    text = _said(caplog, lambda: load_points(path, x="x", y="y", crs="EPSG:32610",
                                             id_column="id"))
    assert "`id` [5]" in text
    _assert_silent(text, [9_876_543.21, 9_876_543.0, 9.876543e6])


def test_a_point_outside_the_area_of_use(tmp_path, caplog):
    t = pyproj.Transformer.from_crs(4326, 27700, always_xy=True)
    lon, lat = np.r_[np.full(11, -2.0), 3.8137], np.r_[np.linspace(53, 54, 11), 61.5173]
    x, y = t.transform(lon, lat)
    path = tmp_path / "p.csv"
    pd.DataFrame({"id": range(12), "e": x, "n": y}).to_csv(path, index=False)
    text = _said(caplog, lambda: load_points(path, x="e", y="n", crs="EPSG:27700",
                                             id_column="id"))
    assert "`id` [11]" in text
    _assert_silent(text, [lon[-1], lat[-1], x[-1], y[-1]])


def test_km_read_as_metres(tmp_path, caplog):
    frame = pd.read_csv(CHORLEY).rename(columns={"x_km": "east", "y_km": "north"})
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    text = _said(caplog, lambda: load_points(path, x="east", y="north", crs="EPSG:27700"))
    assert "coord_unit_m = 1000" in text
    xy = frame[["east", "north"]].to_numpy()
    _assert_silent(text, np.r_[np.abs(xy).max(), xy.min(axis=0), xy.max(axis=0)])


def test_decimal_comma_text_in_a_coordinate(tmp_path, caplog):
    frame = _lonlat()
    path = tmp_path / "semi.csv"
    frame.to_csv(path, index=False, sep=";", decimal=",")
    text = _said(caplog, lambda: load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";",
                                             id_column="id"))
    assert 'set `decimal`' in text and "`id` [100" in text
    assert "-121,4" not in text and "38,54" not in text


def test_constant_and_near_constant_response(tmp_path, caplog):
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2").drop_duplicates(
        subset=["lon", "lat", "price_usd"]).head(40)
    path = tmp_path / "pts.csv"
    for value in (12.3456, 12.3456 + np.random.default_rng(0).normal(0.0, 1e-9, len(raw))):
        raw.assign(log_price=value).to_csv(path, index=False)
        s = spec.replace("data", path=str(path), query=None)
        text = _said(caplog, lambda s=s: prepare_data(s))
        assert "constant" in text
        assert "12.3" not in text and "12.35" not in text


def test_a_log_transform_refusal_does_not_show_the_value():
    """The non-positive response under transform = "log" is counted, never printed."""
    from synthgeo.model.transform import ResponseScale

    scale = ResponseScale(transform="log")
    with pytest.raises(ValueError) as err:
        scale.to_model(np.array([120000.0, -73519.0]), name="price_usd")
    assert "73519" not in str(err.value) and "1 value(s)" in str(err.value)


def test_a_constant_text_covariate_is_refused_without_its_value():
    """break-it 2026-12-08: the one-level refusal showed the level ('SecretZ')."""
    import pandas as pd

    from synthgeo._errors import InputError
    from synthgeo.pipeline.design import design_matrix

    frame = pd.DataFrame({"zone": ["SecretZ"] * 5})
    with pytest.raises(InputError, match="`zone` has one level") as err:
        design_matrix(frame, ["zone"])
    assert "SecretZ" not in str(err.value) and "remove it" in str(err.value)
