"""The risk stage by blocks of records: the same figures to the bit as on whole (L, n) arrays.

Issue 28 (10⁶ records): the per-record figures of the risk stage (exact probabilities, their
variances and covariances over implicates, point guesses, the leave-out posterior's PSIS and
resampling, the release attacker) are computed on blocks of records
(:func:`synthgeo.risk.predictive.record_slices`) so that their temporaries are (L, block)
instead of (L, n). Each record keeps all its implicates in one block, so every reduction over
implicates runs in NumPy's order and the figures must not change in any bit: checked here
against the whole-array formulas and against the stage run with blocks of 4 records.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

import synthgeo.risk.predictive as predictive_module
from synthgeo.config import RiskTarget, bundled_spec_path, load_spec
from synthgeo.pipeline import run_release
from synthgeo.pipeline.risk_stage import score_release_risk
from synthgeo.risk import records
from synthgeo.risk.baselines import (
    baseline_public,
    point_guesses,
    public_regression,
    synthetic_point_guesses,
)
from synthgeo.risk.loo_posterior import resample_rows, reweight_leave_out
from synthgeo.risk.predictive import Predictive, record_slices
from synthgeo.risk.psis import psislw_rows
from synthgeo.testing import fake_fitter, fake_spec

RNG = np.random.default_rng(28)


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 9, 4096, 4097, 10_001])
def test_record_slices_cover_every_record_once_in_blocks_of_at_least_half_the_size(n):
    slices = record_slices(n)
    got = np.concatenate([np.arange(n)[s] for s in slices]) if slices else np.zeros(0)
    assert got.tolist() == list(range(n))
    if n > predictive_module.RECORD_BLOCK:
        sizes = [s.stop - s.start for s in slices]
        assert min(sizes) >= predictive_module.RECORD_BLOCK // 2
        assert max(sizes) <= predictive_module.RECORD_BLOCK
    with pytest.raises(ValueError, match="size"):
        record_slices(n, size=3)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 or 5 records (every test array spans many blocks)."""
    monkeypatch.setattr(predictive_module, "RECORD_BLOCK", 5)


def _predictive(L: int, n: int, *, f_order: bool = False) -> Predictive:
    mean = 11.0 + RNG.normal(size=(n, L)).T if f_order else 11.0 + RNG.normal(size=(L, n))
    return Predictive(mean=mean, sd=RNG.uniform(0.05, 1.0, (L, n)))


@pytest.mark.parametrize("L", [1, 2, 7, 30])
def test_moments_and_guesses_by_blocks_equal_the_whole_array_formulas(small_blocks, L):
    n = 53
    p, q = RNG.uniform(size=(L, n)), RNG.uniform(size=(L, n))
    if L > 1:
        assert _same(records._var(p), p.var(axis=0, ddof=1))
        whole = np.einsum("ln,ln->n", p - p.mean(axis=0), q - q.mean(axis=0)) / (L - 1)
        assert _same(records._cov(p, q), whole)
    for pred in (_predictive(L, n), _predictive(L, n, f_order=True)):  # C and F ordered means
        arith = logsumexp(pred.mean + 0.5 * pred.sd**2, axis=0) - np.log(L)
        assert _same(point_guesses(pred)["arithmetic"], arith)
    Y = 11.0 + RNG.normal(size=(L, n))
    assert _same(synthetic_point_guesses(Y)["arithmetic"], logsumexp(Y, axis=0) - np.log(L))


def test_public_regression_equals_the_whole_array_formula(small_blocks):
    L, n = 19, 41
    Y = 11.0 + RNG.normal(size=(L, n))
    X = np.column_stack([np.ones(n), RNG.normal(size=n)])
    q, r = np.linalg.qr(X)
    mean = (X @ np.linalg.solve(r, q.T @ Y.T)).T
    s2 = ((Y - mean) ** 2).sum(axis=1) / (n - 2)
    sd = np.sqrt(s2[:, None] * (1.0 + (q**2).sum(axis=1)[None, :]))
    lazy = public_regression(Y, X)
    assert _same(lazy.mean, mean) and _same(lazy.s2, s2)
    assert _same(baseline_public(Y, X).sd, sd)
    assert _same(lazy.columns(slice(7, 12)).sd, sd[:, 7:12])


def test_leave_out_posterior_by_blocks_equals_one_block(monkeypatch):
    L, n = 40, 37
    loo = _predictive(L, n)
    log_density = RNG.standard_t(3, (L, n)) * 3.0
    one = reweight_leave_out(loo, log_density)  # 37 records: one block
    monkeypatch.setattr(predictive_module, "RECORD_BLOCK", 4)
    many = reweight_leave_out(loo, log_density)
    for a, b in [(one.predictive.mean, many.predictive.mean),
                 (one.predictive.sd, many.predictive.sd), (one.rows, many.rows),
                 (one.pareto_k, many.pareto_k), (one.ess, many.ess)]:
        assert _same(a, b)
    # and the one block is the whole-array algorithm: PSIS of all records, then resampling
    lw, k = psislw_rows(-log_density.T)
    assert _same(one.pareto_k, k) and _same(one.rows, resample_rows(lw.T))


# --- the whole stage on the bundled spec (fake fitter: fast) --------------------------------


@pytest.fixture(scope="module")
def bundled():
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_release(spec, fitter=fake_fitter(n_draws=100, random_seed=0))


def _score(result, **risk):
    spec = result.spec.replace("risk", targets=[
        RiskTarget(measure="rel:0.1", attack="share", record_threshold=0.05),
        RiskTarget(measure="abs:10000", attack="average", max_attributable_record=0.5)],
        on_risk_failure="warn", **risk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return score_release_risk(spec, result.data, result.fits, result.implicates,
                                  result.at_risk.at_risk, result.locations)


@pytest.mark.slow  # the fake-fitter run of the bundled spec: ~10-20 s
@pytest.mark.parametrize("risk", [{}, {"loo_posterior": "full"}, {"loo_unit": "record"}])
def test_risk_stage_figures_do_not_depend_on_the_block_size(bundled, monkeypatch, risk):
    whole = _score(bundled, **risk)  # 140 records: one block
    # a record shares its site: the other unit is scored too (made on demand, then dropped)
    assert not all(u.same_blocks for u in whole.loo_units.others)
    monkeypatch.setattr(predictive_module, "RECORD_BLOCK", 4)
    blocked = _score(bundled, **risk)
    a, b = whole.per_record(), blocked.per_record()
    assert list(a.columns) == list(b.columns) and a.index.equals(b.index)
    for col in a.columns:
        assert _same(a[col].to_numpy(), b[col].to_numpy()), col
    assert whole.table.to_csv() == blocked.table.to_csv()
    assert whole.verdict_line() == blocked.verdict_line()
    assert whole.loo_posterior == blocked.loo_posterior
    for model, rr in whole.records.items():
        rows = blocked.records[model].group_rows
        assert rr.group_rows.keys() == rows.keys()
        assert all(_same(v, rows[k]) for k, v in rr.group_rows.items())
    sa, sb = whole.release_attack.summary(), blocked.release_attack.summary()
    sa.pop("seconds"), sb.pop("seconds")
    assert sa == sb
    assert _same(whole.release_attack.budget, blocked.release_attack.budget)


def _csr_same(a, b) -> bool:
    return (a.shape == b.shape and _same(a.indptr, b.indptr) and _same(a.indices, b.indices)
            and _same(a.data, b.data) and _same(np.signbit(a.data), np.signbit(b.data)))


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 0.37, 2.0])
def test_posterior_map_in_place_equals_scipys_identity_minus_alpha_q(alpha):
    import scipy.sparse as sp

    from synthgeo.risk.release_attacker import mechanism_map

    n = 60
    A = sp.random(n, n, density=0.08, random_state=3, format="csr")
    Q = (A @ A.T + sp.identity(n) * 2.0).tocsr()
    Q.sort_indices()
    zero = Q.copy()
    off = np.flatnonzero(zero.indices != np.repeat(np.arange(n), np.diff(zero.indptr)))
    zero.data[off[0]] = 0.0  # an explicit zero off the diagonal: SciPy drops it
    one = Q.copy()
    one.data[one.indptr[0]] = 1.0 / alpha if alpha else 1.0  # 1 − αq = 0 on the diagonal
    for q in (Q, zero, one):
        want = (sp.identity(n, format="csr") - alpha * q).tocsr()
        given = q.copy()
        got = mechanism_map(given, alpha, mechanism="posterior", consume=True)
        assert _csr_same(got, want)
        if q is Q and alpha > 0:  # written into Q's own values, no new matrix
            assert np.shares_memory(got.data, given.data)
