"""Large cached draws are kept in a temporary file: the same doubles, nothing resident."""

import numpy as np
import pytest

from synthgeo import _spill
from synthgeo.config import SamplingConfig
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp


def test_spilled_array_reads_back_the_same_bytes_as_a_fresh_copy():
    a = np.random.default_rng(0).standard_normal((3, 5))
    s = _spill.spill(a, min_bytes=0)
    assert isinstance(s, _spill.Spilled) and "0." not in repr(s)  # no values in the repr
    b, c = s.load(), s.load()
    assert b.tobytes() == a.tobytes() and b is not c
    b[0, 0] = 99.0  # a caller's change does not reach the stored copy
    assert s.load().tobytes() == a.tobytes()
    assert _spill.spill(a) is a  # small: kept in memory as before


@pytest.mark.parametrize("gp", ["exact", "nngp"])
def test_grid_fit_effects_are_the_same_when_the_cache_spills(monkeypatch, gp):
    sim = simulate_gp(n=120, random_seed=4)
    sites = make_sites(sim["coords_m"])
    pri = default_priors(sim["y"], sim["X"], sites)
    flat = np.arange(0, 200, 10)

    def effects(threshold):
        monkeypatch.setattr(_spill, "SPILL_BYTES", threshold)
        fit = fit_gp_grid(sim["y"], sim["X"], sites, priors=pri, coef_names=["a", "b"],
                          config=SamplingConfig(sampler="grid", draws=100, seed=3), gp=gp)
        first, again = fit.effects(flat), fit.effects(flat)
        cached = fit.effect_sampler.__closure__
        held = [c.cell_contents for c in cached if isinstance(c.cell_contents, dict)
                and any(isinstance(k, tuple) for k in c.cell_contents)]
        return first, again, held[0][tuple(flat)]

    w, w_again, held = effects(0)  # every array spills
    assert isinstance(held, _spill.Spilled)
    assert w_again.tobytes() == w.tobytes() and w_again is not w
    w_mem, _, held_mem = effects(2**40)  # nothing spills: the old route
    assert isinstance(held_mem, np.ndarray)
    assert w.tobytes() == w_mem.tobytes()
