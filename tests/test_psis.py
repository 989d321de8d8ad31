"""synthgeo.risk.psis: ArviZ's PSIS, the same to the last bit, without importing ArviZ."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.risk.psis import psislw as psislw_one
from synthgeo.risk.psis import psislw_rows as psislw


@pytest.mark.parametrize("shape,reff", [((30, 200), 1.0), ((5, 1000), 0.7), ((3, 40), 1.0),
                                        ((1, 12), 1.0)])
def test_psislw_is_arviz_psislw_bit_for_bit(shape, reff):
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(7)
    raw = rng.standard_t(2.5, size=shape) * rng.uniform(0.2, 3.0, size=shape[:-1] + (1,))
    lw, k = psislw(raw, reff=reff)
    lw_az, k_az = az.psislw(raw.copy(), reff=reff)
    assert np.array_equal(lw, np.asarray(lw_az))
    assert np.array_equal(k, np.asarray(k_az, float))
    assert np.allclose(np.exp(lw).sum(axis=-1), 1.0)
    lw1, k1 = psislw_one(raw, reff=reff)  # the one-row port, the rows' fallback
    assert np.array_equal(lw1, lw_az) and np.array_equal(k1, np.asarray(k_az, float))


def test_psislw_leaves_its_input_alone_and_flags_short_tails():
    raw = np.arange(8.0)[None, :]
    before = raw.copy()
    lw, k = psislw(raw)
    assert np.array_equal(raw, before)
    assert np.isinf(k).all()  # a tail of 4 or fewer draws is not fitted
    assert np.allclose(lw, raw - np.log(np.exp(raw).sum()))


def test_psislw_smooths_a_heavy_tail_and_reports_its_shape():
    rng = np.random.default_rng(3)
    raw = np.log(rng.pareto(1.0 / 0.9, size=(1, 4000)) + 1.0)  # GPD tail shape 0.9
    lw, k = psislw(raw)
    assert 0.7 < k[0] < 1.1
    low = np.argmin(raw[0])  # in the body: unchanged but for the normalisation
    shift = raw[0, low] - lw[0, low]
    assert np.allclose(np.sort(lw[0] + shift)[:3000], np.sort(raw[0])[:3000])
    assert (lw[0] + shift).max() <= raw.max() + 1e-9  # the tail truncated at the raw maximum
    assert not np.allclose(lw[0] + shift, raw[0])  # and smoothed


def test_psislw_refuses_bad_input():
    with pytest.raises(ValueError, match="reff"):
        psislw(np.zeros((2, 10)), reff=0.0)
    with pytest.raises(ValueError, match="log_weights"):
        psislw(np.float64(1.0))
