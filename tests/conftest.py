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
