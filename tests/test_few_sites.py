"""Few distinct locations: a coded warning that reaches release.json (break-it 2026-12-07)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import prepare_data
from synthgeo.pipeline.data import FEW_SITES


def test_records_at_few_locations_carry_the_few_sites_warning(tmp_path):
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2").copy()
    spots = np.array([[38.58, -121.49], [38.63, -121.43], [38.55, -121.40], [38.67, -121.30],
                      [38.50, -121.45]])  # five Sacramento locations, km apart
    pick = np.arange(len(raw)) % len(spots)
    raw["lat"], raw["lon"] = spots[pick, 0], spots[pick, 1]
    path = tmp_path / "five_sites.csv"
    raw.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = prepare_data(spec.replace("data", path=str(path)))
    codes = [w["code"] for w in data.gdf.attrs["warnings"]]
    assert data.sites.n_sites == 5 < FEW_SITES and codes.count("few_sites") == 1
    text = next(w["message"] for w in data.gdf.attrs["warnings"] if w["code"] == "few_sites")
    assert text.startswith("only 5 distinct locations among 140 records")
    assert any("only 5 distinct locations" in str(w.message) for w in caught)
    # the bundled file itself has many locations: no such warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bundled = prepare_data(spec)
    assert "few_sites" not in [w["code"] for w in bundled.gdf.attrs.get("warnings") or []]
