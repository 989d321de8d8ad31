"""Common random numbers between the two models (issue 24, item 1).

Per-draw random numbers (a draw's effect does not depend on which other draws are drawn with
it, nor on the grid cells they fall in), the NNGP's normals indexed by site (a restricted
model's inactive sites leave the others' normals in place), and the documentation's figures
coming from ``benchmarks/bench_crn.py``'s records. The end-to-end checks (identical models give
exactly 0 difference; a real rise is found) are in tests/test_risk_noise.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from synthgeo._seed import keyed_seeds
from synthgeo.inference.conditionals import draw_effects_exact, draw_generators
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.model.kernels import make_sites

ROOT = Path(__file__).resolve().parents[1]


def _data(n=40, seed=3):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 3000, (n, 2))
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    y = X @ [1.0, 0.5] + rng.normal(0, 0.5, n)
    return y, X, make_sites(xy)


def _draws(k=6, seed=4, cells=None):
    """k posterior draws; draws of one grid cell (θ point) share (φ, α), as on the grid."""
    rng = np.random.default_rng(seed)
    cell = np.arange(k) if cells is None else np.asarray(cells)
    return {"sigma2": rng.uniform(0.5, 1.5, k), "alpha": rng.uniform(0.1, 1.0, k)[cell],
            "phi_km": rng.uniform(1, 5, k)[cell], "beta": rng.normal(size=(k, 2)),
            "cell": cell}


def _rows(draws, rows):
    return {k: v[rows] for k, v in draws.items()}


def test_keyed_seeds_depend_on_the_key_only():
    a = keyed_seeds(11, [5, 2, 9])
    b = keyed_seeds(np.random.SeedSequence(11), [9])
    assert (a[2].generate_state(4) == b[0].generate_state(4)).all()
    assert not (a[0].generate_state(4) == a[1].generate_state(4)).all()
    with pytest.raises(ValueError, match="per-draw seeds"):
        draw_generators([1, 2], 3)


def test_an_exact_effect_draw_depends_on_its_own_seed_only():
    y, X, sites = _data()
    draws = _draws()
    seeds = keyed_seeds(7, range(6))
    d = np.ones(sites.n_sites)
    all_w = draw_effects_exact(draws, y, X, sites, scale=d, random_seed=seeds)
    some = [4, 1]
    part = draw_effects_exact(_rows(draws, some), y, X, sites, scale=d,
                              random_seed=[seeds[i] for i in some])
    np.testing.assert_array_equal(part, all_w[some])


@pytest.mark.parametrize("solver", ["splu", "cg"])
def test_an_nngp_effect_draw_depends_on_its_own_seed_only(solver):
    y, X, sites = _data()
    eff = NNGPEffects(y, X, sites, np.ones(sites.n_sites), n_neighbors=8, solver=solver)
    draws = _draws(cells=[0, 0, 1, 1, 2, 0])  # grid cells shared by several draws
    seeds = keyed_seeds(7, range(6))
    all_w = eff.draw(draws, seeds)
    some = [5, 2]
    part = eff.draw(_rows(draws, some), [seeds[i] for i in some])
    np.testing.assert_allclose(part, all_w[some], rtol=1e-10, atol=1e-12)


def test_nngp_normals_are_indexed_by_site():
    """An inactive site (d = 0) does not shift the other sites' normals.

    With no data information (the draw's noise scale dominates: α huge) w is the prior draw;
    sites with d = 1 and d = 0 elsewhere then get the same prior normals at the active sites
    in both models, so w at a site far from the inactive one is nearly the same.
    """
    y, X, sites = _data(n=60)
    d = np.ones(sites.n_sites)
    far = np.argmax(np.linalg.norm(sites.coords_m - sites.coords_m[0], axis=1))
    d[0] = 0.0
    draws = _draws(k=3)
    draws["alpha"] = np.full(3, 1e6)  # no information from y: w follows its NNGP prior
    draws["phi_km"] = np.full(3, 20.0)  # short range: site 0 hardly informs far sites
    seeds = keyed_seeds(9, range(3))
    full = NNGPEffects(y, X, sites, np.ones(sites.n_sites), n_neighbors=8).draw(draws, seeds)
    restricted = NNGPEffects(y, X, sites, d, n_neighbors=8).draw(draws, seeds)
    other = NNGPEffects(y, X, sites, d, n_neighbors=8).draw(draws, keyed_seeds(10, range(3)))
    gap_same = np.abs(full[:, far] - restricted[:, far]).max()
    gap_indep = np.abs(full[:, far] - other[:, far]).max()
    assert gap_same < 0.1 * gap_indep


def test_docs_block_is_what_bench_crn_makes_from_its_records(benchmark_module):
    """docs/risk-and-utility.md's common-random-numbers figures come from bench_crn's records."""
    mod = benchmark_module("bench_crn")
    records = mod.newest_records()
    assert {"bundled", "lucas"} <= set(records)
    text = mod.DOC.read_text(encoding="utf-8")
    i, j = text.index(mod.BEGIN), text.index(mod.END) + len(mod.END)
    assert text[i:j] == mod.render_block(records)
    for _, rec in records.values():
        for row in rec["detail"]["rows"]:  # common random numbers never add noise
            assert row["after"]["mean"] <= row["before"]["mean"]
