"""Shared seeded fixtures."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.model.kernels import make_sites
from synthgeo.testing import simulate_gp


@pytest.fixture(scope="module")
def small_gp():
    """40 records of a seeded GP on a 1 km square, two sharing one location."""
    sim = simulate_gp(40, random_seed=11)
    sim["coords_m"][1] = sim["coords_m"][0]  # a coincident pair: one site, two records
    sim["sites"] = make_sites(sim["coords_m"])
    return sim


@pytest.fixture()
def rng():
    return np.random.default_rng(12345)


#: Light settings for the one real end-to-end run the slow tests share.
LIGHT = ["--draws", "300", "--tune", "300", "--implicates", "20",
         "--on-convergence-failure", "warn"]


@pytest.fixture(scope="session")
def bundled_release(tmp_path_factory):
    """Output folder of one `synthgeo run` of the bundled spec (light settings; slow tests)."""
    from synthgeo.cli.main import main

    out = tmp_path_factory.mktemp("bundled") / "out"
    assert main(["--quiet", "run", "--out", str(out), *LIGHT]) == 0
    return out


# --- one door for points: the same records from a file or handed over in memory ---------------


def frame_like_csv(path, *, x=None, y=None, crs=None, coord_unit_m=None, query=None,
                   **read_csv):
    """The records of a CSV as a GeoDataFrame built in memory (no synthgeo reading).

    The geometry is built from the `x`/`y` columns (times `coord_unit_m`, for a metre CRS) in
    `crs`; every column is kept, as a user would hand the data to ``sg.synthesize``.
    """
    import geopandas
    import pandas as pd

    frame = pd.read_csv(path, **read_csv)
    if query is not None:
        frame = frame.query(query).reset_index(drop=True)
    scale = 1.0 if coord_unit_m is None else float(coord_unit_m)
    geometry = geopandas.points_from_xy(frame[x] * scale, frame[y] * scale)
    return geopandas.GeoDataFrame(frame, geometry=geometry, crs=crs)


@pytest.fixture(params=["file", "frame"])
def load(request):
    """``load_points(path, **kw)``, or the same records handed over as a GeoDataFrame.

    The ``frame`` route builds the GeoDataFrame with :func:`frame_like_csv` (the reading keys
    ``crs``, ``coord_unit_m``, ``query``) and checks it with ``check_points_frame`` (the
    others). ``load.route`` says which.
    """
    from synthgeo.io.points import load_points
    from synthgeo.io.read import check_points_frame

    def _load(path, **kw):
        if request.param == "file":
            return load_points(path, **kw)
        build = {k: kw.pop(k) for k in ("crs", "coord_unit_m", "query") if k in kw}
        gdf = frame_like_csv(path, x=kw.get("x"), y=kw.get("y"), **build)
        return check_points_frame(gdf, **kw)

    _load.route = request.param
    return _load


@pytest.fixture(scope="session")
def benchmark_module():
    """Return ``load(name)``: a script of ``benchmarks/`` imported by name.

    The benchmarks import their siblings (``_record``), so ``benchmarks/`` is on ``sys.path``
    while the module runs; the tests compare a docs block with what the script makes.
    """
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(bench))
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(str(bench))
        return mod

    return load
