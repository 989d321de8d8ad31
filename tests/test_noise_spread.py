"""The input noise's spread in the released means against dense brute force."""

import numpy as np
import pytest
import scipy.sparse as sp

from synthgeo.risk.noise_spread import noise_spread


def _dense(K, X, calibration, separate, G):
    n = X.shape[0]
    H = X @ np.linalg.pinv(X.T @ X) @ X.T
    P = np.eye(n) - H
    R = np.eye(n) - X @ G
    D = np.diag(np.diag(H) / (1.0 - np.diag(H)))
    if calibration == "none":
        return X @ G + K @ R, np.zeros((n, n))
    if calibration == "covariates":
        return P @ K @ R, H
    return (np.eye(n) + D) @ P @ K @ R, H - D @ P


@pytest.mark.parametrize("calibration,separate", [("none", False), ("covariates", False),
                                                  ("covariates", True),
                                                  ("covariates_loo", False)])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("gls", [False, True])
def test_matches_dense_brute_force(calibration, separate, sparse, gls):
    rng = np.random.default_rng(3)
    n = 40
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.exponential(size=n)])
    K = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.2)
    np.fill_diagonal(K, 0.0)
    e, e_ols = rng.normal(size=n), rng.normal(size=n)
    kappa, ols = 0.7, (0.3 if separate else None)
    if gls:  # a GLS map at an arbitrary positive-definite precision
        Z = rng.normal(size=(n, n))
        Q = Z @ Z.T + n * np.eye(n)
        G = np.linalg.solve(X.T @ Q @ X, X.T @ Q)
    else:
        G = np.linalg.pinv(X.T @ X) @ X.T
    A, B = _dense(K, X, calibration, separate, G)
    if separate:
        var = kappa ** 2 * (A ** 2).sum(1) + ols ** 2 * (B ** 2).sum(1)
        shift = A @ e + B @ e_ols
    else:
        var = kappa ** 2 * ((A + B) ** 2).sum(1)
        shift = (A + B) @ e
    v, s = noise_spread(sp.csr_matrix(K) if sparse else K, X, calibration=calibration,
                        kappa=kappa, ols_sd=ols, e=e, e_ols=e_ols if separate else None,
                        beta_map=G if gls else None)
    np.testing.assert_allclose(v, var, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s, shift, rtol=1e-9, atol=1e-12)


def test_refuses_separate_target_with_leave_own_out():
    with pytest.raises(ValueError, match="full rank"):
        noise_spread(np.zeros((3, 3)), np.ones((3, 1)), calibration="covariates_loo",
                     kappa=1.0, ols_sd=0.1, e=np.zeros(3), e_ols=np.zeros(3))
