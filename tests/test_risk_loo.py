"""Leave-one-out baseline (synthgeo.risk.loo): closed form = brute-force conditioning."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from synthgeo.risk.loo import (
    baseline_loo,
    exact_precision,
    loo_blocks,
    loo_conditional,
    nngp_precision,
)

RNG = np.random.default_rng(3)
N_SITES = 30
SITE_XY = RNG.uniform(0, 2_000, (N_SITES, 2))  # metres
SITE = np.concatenate([np.arange(N_SITES), [0, 0, 5, 7, 7, 12]])  # shared sites
SUBJECT = np.arange(SITE.size)
SUBJECT[[3, 20]] = 1000  # one person with records at two sites (3 and 20)
XY = SITE_XY[SITE]
N = SITE.size
PHI, ALPHA, SIGMA2 = 3.0 / 800.0, 0.05, 2.0


def _brute_force(cov: np.ndarray, r: np.ndarray, blocks: np.ndarray):
    """Condition each block on everything outside it, by a dense solve (the definition)."""
    mean, var = np.empty(N), np.empty(N)
    for b in np.unique(blocks):
        inb = blocks == b
        s_ob = cov[np.ix_(~inb, inb)]
        sol = np.linalg.solve(cov[np.ix_(~inb, ~inb)], np.column_stack([r[~inb], s_ob]))
        mean[inb] = s_ob.T @ sol[:, 0]
        var[inb] = np.diag(cov[np.ix_(inb, inb)] - s_ob.T @ sol[:, 1:])
    return mean, var


def test_blocks_join_site_and_subject():
    blocks = loo_blocks(SITE, SUBJECT)
    assert len({blocks[0], blocks[30], blocks[31]}) == 1  # three records at site 0
    assert blocks[7] == blocks[33] == blocks[34]
    assert blocks[3] == blocks[20]  # one subject, two sites
    assert blocks[1] != blocks[2]
    assert np.unique(blocks).size == N_SITES - 1  # 30 sites, 3 and 20 joined
    assert np.unique(loo_blocks(SITE)).size == N_SITES


def test_dense_closed_form_equals_brute_force_conditioning():
    r = RNG.normal(0, 1, N)
    blocks = loo_blocks(SITE, SUBJECT)
    K = np.exp(-PHI * cdist(XY, XY)) + ALPHA * np.eye(N)
    mean, var = loo_conditional(r, exact_precision(XY)(PHI, ALPHA), blocks)
    b_mean, b_var = _brute_force(K, r, blocks)
    np.testing.assert_allclose(mean, b_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(var, b_var, rtol=0, atol=1e-12)
    # singletons, and several columns at once
    two = np.column_stack([r, 2 * r])
    m2, v2 = loo_conditional(two, np.linalg.inv(K))
    b1, bv = _brute_force(K, r, np.arange(N))
    np.testing.assert_allclose(m2, np.column_stack([b1, 2 * b1]), atol=1e-12)
    np.testing.assert_allclose(v2, bv, atol=1e-12)


def test_nngp_closed_form_equals_brute_force_on_its_implied_covariance():
    r = RNG.normal(0, 1, N)
    blocks = loo_blocks(SITE, SUBJECT)
    Q = nngp_precision(XY, n_neighbors=4)(PHI, ALPHA)
    assert sp.issparse(Q)
    cov = np.linalg.inv(Q.toarray())  # the NNGP's implied covariance C~
    mean, var = loo_conditional(r, Q, blocks)
    b_mean, b_var = _brute_force(cov, r, blocks)
    np.testing.assert_allclose(mean, b_mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(var, b_var, rtol=0, atol=1e-10)
    # with m = 4 the NNGP is an approximation: it differs from the exact GP's LOO
    exact_mean, _ = loo_conditional(r, exact_precision(XY)(PHI, ALPHA), blocks)
    assert np.abs(exact_mean - mean).max() > 1e-4


def test_nngp_precision_is_the_engines_factorisation():
    from synthgeo.inference.grid_posterior import NNGPCovariance
    from synthgeo.model.kernels import make_sites

    y, X = RNG.normal(0, 1, N), np.column_stack([np.ones(N), RNG.normal(0, 1, N)])
    sites = make_sites(XY)
    engine = NNGPCovariance(y, X, sites, np.ones(sites.n_sites), n_neighbors=6)
    st = engine.stats(PHI * 1000.0, ALPHA)  # the engine works in kilometres
    Q = nngp_precision(XY, n_neighbors=6)(PHI, ALPHA)
    np.testing.assert_allclose(X.T @ (Q @ X), st.XtKX, rtol=1e-10)
    np.testing.assert_allclose(X.T @ (Q @ y), st.XtKy, rtol=1e-10)


def test_nngp_precision_equals_the_sparse_product_of_its_factors():
    """The compiled assembly into a fixed pattern is (I − B)ᵀF⁻¹(I − B), in input order."""
    from synthgeo.model.vecchia import ordered_neighbours, vecchia_factors

    g = ordered_neighbours(XY, 5)
    f = vecchia_factors(g, PHI, ALPHA)
    perm = sp.csr_matrix((np.ones(N), (np.arange(N), g.order)), shape=(N, N))
    want = (perm.T @ f.precision() @ perm).toarray()
    pf = nngp_precision(XY, n_neighbors=5)
    Q = pf(PHI, ALPHA)
    assert sp.issparse(Q) and Q.has_sorted_indices
    np.testing.assert_allclose(Q.toarray(), want, rtol=1e-13, atol=1e-13)
    Q2 = pf(2 * PHI, 3 * ALPHA)  # another cell: the same pattern, its own values
    assert np.array_equal(Q2.indices, Q.indices) and not np.allclose(Q2.data, Q.data)
    np.testing.assert_allclose(Q.toarray(), want, rtol=1e-13, atol=1e-13)  # Q untouched


def test_baseline_loo_scales_with_sigma2_and_groups_draws_by_cell():
    y = RNG.normal(10, 1, N)
    X = np.column_stack([np.ones(N), RNG.normal(0, 1, N)])
    beta = np.array([[10.0, 0.1], [9.5, 0.0], [10.2, 0.3]])
    sigma2, phi = np.array([1.0, 4.0, 2.0]), np.array([PHI, PHI, PHI / 2])
    alpha = np.array([ALPHA, ALPHA, 0.2])
    calls = []
    base = exact_precision(XY)

    def counted(p, a):
        calls.append((p, a))
        return base(p, a)

    g = baseline_loo(y, X, beta=beta, sigma2=sigma2, phi=phi, alpha=alpha, precision_of=counted)
    assert len(calls) == 2  # draws 0 and 1 share (phi, alpha)
    for ell in range(3):
        K = sigma2[ell] * (np.exp(-phi[ell] * cdist(XY, XY)) + alpha[ell] * np.eye(N))
        mu = X @ beta[ell]
        m, v = _brute_force(K, y - mu, np.arange(N))
        np.testing.assert_allclose(g.mean[ell], mu + m, atol=1e-10)
        np.testing.assert_allclose(g.sd[ell], np.sqrt(v), atol=1e-10)
    assert g.name == "baseline_loo"


def test_baseline_loo_refuses_mismatched_draws():
    with pytest.raises(ValueError, match=r"posterior draws must be beta \(L, 1\)"):
        baseline_loo(np.zeros(3), np.ones((3, 1)), beta=np.zeros((2, 1)), sigma2=np.ones(3),
                     phi=np.ones(2), alpha=np.ones(2), precision_of=exact_precision(XY[:3]))
    with pytest.raises(ValueError, match=r"`precision` must have shape \(3, 3\)"):
        loo_conditional(np.zeros(3), np.eye(4))
