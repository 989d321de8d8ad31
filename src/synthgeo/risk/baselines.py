r"""The public baseline and the point guesses of the implicate-average attack.

**Public baseline** (docs/risk-and-utility.md, "Baseline and attributable risk"): an attacker
without locations regresses the released response on the released covariates, by OLS in each
implicate ℓ, and guesses y_i from the usual prediction distribution

.. math::

    N\bigl(x_i\hat\beta^{(\ell)},\ \hat s^{2(\ell)}(1 + h_{ii})\bigr), \qquad
    \hat s^{2(\ell)} = \frac{\lVert Y^{\dagger(\ell)} - X\hat\beta^{(\ell)}\rVert^2}{n - p},
    \quad h_{ii} = x_i(X^\top X)^{-1}x_i^\top .

**Average attack**: an attacker holding all L implicates guesses one value. On the person's
scale there are two natural averages, and the stronger is reported: the *geometric* guess
g(mean_ℓ Y†) and the *arithmetic* guess mean_ℓ g(Y†). For a normal predictive N(m_ℓ, s_ℓ²) the
same two are g(mean_ℓ m_ℓ) and, with the smearing correction E[e^Y] = e^{m + s²/2} (Duan 1983,
JASA 78(383), doi:10.1080/01621459.1983.10478017), mean_ℓ e^{m_ℓ + s_ℓ²/2}. Guesses are kept on
the model scale (log of the person's-scale guess) so that nothing overflows.

Sources: Reiter, Wang & Zhang (2014), J. Privacy and Confidentiality 6(1),
doi:10.29012/jpc.v6i1.635; Giomi et al. (2022), PoPETs 2023(2), doi:10.56553/popets-2023-0055.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from synthgeo.risk.predictive import ImplicateRecordShape, Predictive, record_slices

__all__ = ["baseline_public", "public_regression", "PublicBaseline", "point_guesses",
           "synthetic_point_guesses", "FORMS"]

#: The two point guesses of the average attack.
FORMS = ("geometric", "arithmetic")

#: Implicates per block of the public regression's residual sums of squares.
_ROWS = 8


@dataclass(frozen=True, eq=False)
class PublicBaseline(ImplicateRecordShape):
    """The public regression's predictive with its sd made block by block, not stored.

    The sd s^(ℓ)(1 + h_ii)^½ is a product of a per-implicate and a per-record factor: keeping
    the two factors instead of an (L, n) array saves one such array while the risk stage
    scores (:func:`synthgeo.risk.records.score_records` reads it by blocks of records).

    Attributes
    ----------
    mean : ndarray of shape (L, n_records)
        x_i β̂^(ℓ), model scale.
    s2 : ndarray of shape (L,)
        ŝ^2(ℓ), model-scale units².
    leverage : ndarray of shape (n_records,)
        h_ii.
    name : str
        ``"baseline_public"``.
    """

    mean: np.ndarray
    s2: np.ndarray
    leverage: np.ndarray
    name: str = "baseline_public"

    def sd_of(self, records: slice) -> np.ndarray:
        """Return the sd (L, block) of a block of records, √(ŝ²(1 + h_ii))."""
        return np.sqrt(self.s2[:, None] * (1.0 + self.leverage[None, records]))

    def columns(self, records: slice) -> Predictive:
        """Return the :class:`Predictive` of a block of records (its sd made for it)."""
        return Predictive(mean=self.mean[:, records], sd=self.sd_of(records), name=self.name)

    def predictive(self) -> Predictive:
        """Return the whole predictive, (L, n_records) sd included."""
        return self.columns(slice(None))


def public_regression(synthetic: np.ndarray, X: np.ndarray) -> PublicBaseline:
    """OLS of each implicate's synthetic response on the released covariates, sd not stored.

    :func:`baseline_public` without its (L, n) sd array (:class:`PublicBaseline`); the same
    parameters, errors and values.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> b = public_regression(np.array([[1.0, 2.0, 3.0, 5.0]]), X)
    >>> b.mean.round(3).tolist(), b.s2.round(3).tolist(), b.leverage.round(3).tolist()
    ([[0.8, 2.1, 3.4, 4.7]], [0.15], [0.7, 0.3, 0.3, 0.7])
    >>> b.columns(slice(0, 2)).sd.round(3).tolist()  # √(0.15 · (1 + h))
    [[0.505, 0.442]]
    """
    Y = np.asarray(getattr(synthetic, "values", synthetic), dtype=float)
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    if Y.ndim != 2 or Y.shape[1] != n:
        raise ValueError(f"`synthetic` must have shape (L, {n}) to match `X`, got {Y.shape}.")
    if n <= p:
        raise ValueError(f"the public regression needs more records than coefficients "
                         f"({n} records, {p} coefficients).")
    q, r = np.linalg.qr(X)
    if np.linalg.matrix_rank(r) < p:
        raise ValueError("released covariates are collinear: the public regression is not "
                         "identified; drop a covariate.")
    coef = np.linalg.solve(r, q.T @ Y.T)  # (p, L)
    mean = (X @ coef).T  # (L, n)
    s2 = np.empty(Y.shape[0])
    for a in range(0, Y.shape[0], _ROWS):  # blocks of implicates: each row summed as a whole
        resid = Y[a:a + _ROWS] - mean[a:a + _ROWS]
        np.square(resid, out=resid)
        s2[a:a + _ROWS] = resid.sum(axis=1)
    s2 /= n - p  # (L,)
    h = (q**2).sum(axis=1)  # leverages (n,)
    return PublicBaseline(mean=mean, s2=s2, leverage=h)


def baseline_public(synthetic: np.ndarray, X: np.ndarray) -> Predictive:
    """OLS of each implicate's synthetic response on the released covariates.

    Parameters
    ----------
    synthetic : array-like of shape (L, n_records)
        Y†, model scale (an ``xarray.DataArray`` with dims (implicate, record) works).
    X : ndarray of shape (n_records, p)
        Released covariates with the intercept column.

    Returns
    -------
    Predictive
        ``name="baseline_public"`` (module docstring).

    Raises
    ------
    ValueError
        If the shapes disagree, there are not more records than coefficients, or X is rank
        deficient.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> g = baseline_public(np.array([[1.0, 2.0, 3.0, 4.0]]), X)  # a perfect line
    >>> g.mean.round(12).tolist(), g.sd.round(12).tolist()
    ([[1.0, 2.0, 3.0, 4.0]], [[0.0, 0.0, 0.0, 0.0]])
    """
    return public_regression(synthetic, X).predictive()


def point_guesses(pred: Predictive | PublicBaseline, g: str = "exp") -> dict[str, np.ndarray]:
    """Return the average attack's two guesses from a normal predictive, model scale.

    Parameters
    ----------
    pred : Predictive or PublicBaseline
    g : {"exp", "identity"}, default="exp"

    Returns
    -------
    dict
        ``"geometric"``: mean_ℓ m_ℓ; ``"arithmetic"``: log mean_ℓ exp(m_ℓ + s_ℓ²/2) for
        g = exp (smearing), mean_ℓ m_ℓ for the identity. Each of shape (n_records,).

    Examples
    --------
    >>> pred = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.2))
    >>> {k: round(float(v[0]), 4) for k, v in point_guesses(pred).items()}
    {'geometric': 0.0, 'arithmetic': 0.02}
    """
    geo = pred.mean.mean(axis=0)
    if g == "identity":
        return {"geometric": geo, "arithmetic": geo.copy()}
    arith = np.empty(pred.n_records)
    for cols in record_slices(pred.n_records):  # (L, block) temporaries, the same values
        block = pred.columns(cols)
        arith[cols] = logsumexp(block.mean + 0.5 * block.sd**2, axis=0)
    arith -= np.log(pred.n_implicates)
    return {"geometric": geo, "arithmetic": arith}


def synthetic_point_guesses(synthetic: np.ndarray, g: str = "exp") -> dict[str, np.ndarray]:
    """Return the average attack's two guesses from the released implicates, model scale.

    Parameters
    ----------
    synthetic : array-like of shape (L, n_records)
        Y†, model scale.
    g : {"exp", "identity"}, default="exp"

    Returns
    -------
    dict
        ``"geometric"``: mean_ℓ Y†; ``"arithmetic"``: log mean_ℓ exp(Y†) (g = exp) or
        mean_ℓ Y† (identity). Each of shape (n_records,).

    Examples
    --------
    >>> ys = np.log([[100.0], [400.0]])
    >>> {k: round(float(np.exp(v[0])), 6) for k, v in synthetic_point_guesses(ys).items()}
    {'geometric': 200.0, 'arithmetic': 250.0}
    """
    Y = np.asarray(getattr(synthetic, "values", synthetic), dtype=float)
    geo = Y.mean(axis=0)
    if g == "identity":
        return {"geometric": geo, "arithmetic": geo.copy()}
    arith = np.empty(Y.shape[1])
    for cols in record_slices(Y.shape[1]):  # (L, block) temporaries, the same values
        arith[cols] = logsumexp(Y[:, cols], axis=0)
    arith -= np.log(Y.shape[0])
    return {"geometric": geo, "arithmetic": arith}
