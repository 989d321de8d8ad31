"""Factorise a symmetric positive-definite precision once: solves and its log-determinant.

Two engines behind one small interface (``solve``, ``logdet``):

- dense: LAPACK Cholesky (``scipy.linalg.cho_factor``), for the exact GP (a few thousand sites);
- sparse: SuperLU (``scipy.sparse.linalg.splu``) in symmetric mode — no pivoting
  (``diag_pivot_thresh=0``) and a minimum-degree ordering of AᵀA + A
  (``MMD_AT_PLUS_A``) — for the latent NNGP precision. Without pivoting, the LU of a
  symmetric positive-definite Q is Q = L U with U = diag(u) Lᵀ after the symmetric permutation,
  so ``log|Q| = Σ log u_i`` and a non-positive u_i means Q was not positive definite.

Measured (``benchmarks/bench_families.py factor``): 10,414 NNGP sites, 15 neighbours, 5
coefficients in the latent field: SuperLU with MMD_AT_PLUS_A 0.8 s a factorisation, COLAMD 2.2 s;
CHOLMOD (scikit-sparse 0.4.16 over Debian's SuiteSparse 5.12) 0.5 s — too small a gain for a
compiled system dependency, so synthgeo uses SciPy only.

**Dense Cholesky without the GIL** (:func:`cho_factor`, :func:`cho_solve`,
:func:`cho_inverse`): the one home of the dense factorisation that the exact GP's grid cells,
posterior draws, effect draws and leave-one-out baseline run in threads. SciPy's
``scipy.linalg.cho_factor``/``cho_solve`` hold the GIL while LAPACK runs (its f2py wrappers do
not release it), so two threads of them took as long as one: measured at N = 500 on 2 cores,
400 factorisations 0.71 s in one thread and 0.71 s in two. The same LAPACK routines (``dpotrf``,
``dpotrs``, ``dpotri``) are called here through SciPy's public Cython LAPACK
(``scipy.linalg.cython_lapack``, the function pointers Cython modules ``cimport``) by ctypes,
which releases the GIL during the call: two threads then run at ~1.9x one. The factor is
computed in place on the caller's array (no copy), and the results are bit-identical to SciPy's
(the same routine on the same numbers: ``tests/test_linalg.py``).
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cython_lapack
from scipy.sparse.linalg import splu

__all__ = ["SPDFactor", "NotPositiveDefiniteError", "cho_factor", "cho_solve", "cho_inverse"]

_INT_P = ctypes.POINTER(ctypes.c_int)
# private prototypes of the two C-API calls (ctypes.pythonapi's shared attributes untouched)
_CAPSULE_NAME = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi))
_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _lapack(name: str, *argtypes):
    """Return a LAPACK routine of ``scipy.linalg.cython_lapack`` as a ctypes function."""
    capsule = cython_lapack.__pyx_capi__[name]
    return ctypes.CFUNCTYPE(None, *argtypes)(_CAPSULE_POINTER(capsule, _CAPSULE_NAME(capsule)))


# (uplo, n, a, lda, info) and (uplo, n, nrhs, a, lda, b, ldb, info), Fortran conventions
_DPOTRF = _lapack("dpotrf", ctypes.c_char_p, _INT_P, ctypes.c_void_p, _INT_P, _INT_P)
_DPOTRI = _lapack("dpotri", ctypes.c_char_p, _INT_P, ctypes.c_void_p, _INT_P, _INT_P)
_DPOTRS = _lapack("dpotrs", ctypes.c_char_p, _INT_P, _INT_P, ctypes.c_void_p, _INT_P,
                  ctypes.c_void_p, _INT_P, _INT_P)


def _square_f64(a, what: str, *, writeable: bool = True) -> None:
    """Refuse anything LAPACK cannot take in place: ValueError naming ``what``."""
    ok = (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.dtype.isnative
          and a.ndim == 2 and a.shape[0] == a.shape[1] and (a.flags.writeable or not writeable))
    if not ok:
        raise ValueError(f"`{what}` must be a {'writeable ' if writeable else ''}square "
                         f"float64 array in native byte order, got "
                         f"{getattr(a, 'dtype', type(a).__name__)} of shape {np.shape(a)}")


def cho_factor(a: np.ndarray, *, check_finite: bool = True) -> tuple[np.ndarray, bool]:
    """Lower Cholesky factor of a symmetric positive-definite matrix, in place, without the GIL.

    LAPACK ``dpotrf`` on ``a``'s own memory (see the module docstring): ``a`` is overwritten.
    Same result, bit for bit, as ``scipy.linalg.cho_factor(a, lower=True)`` for a symmetric
    ``a``. LAPACK reads one triangle: the lower one of a Fortran-ordered ``a``, the upper one
    of a C-ordered ``a`` (its lower one in Fortran's view); both must hold the matrix, as in
    an exactly symmetric array. A matrix given by one triangle only needs
    ``scipy.linalg.cho_factor``. Threads calling this at once should limit BLAS to one thread
    each (``threadpoolctl.threadpool_limits(1)``), as synthgeo's do: OpenBLAS's own threads on
    top of them oversubscribe the cores.

    Parameters
    ----------
    a : ndarray of shape (n, n), float64
        Symmetric positive definite, C- or Fortran-contiguous, writeable; destroyed.
    check_finite : bool, default=True
        Refuse NaN and infinite entries (they would give a factor of NaN); synthgeo's own
        callers build finite matrices and pass False.

    Returns
    -------
    c : ndarray of shape (n, n)
        A Fortran-ordered view of ``a``'s memory whose lower triangle is L (A = L Lᵀ); the
        strict upper triangle holds what ``a`` held there.
    lower : bool
        True (the pair is what :func:`cho_solve` and ``scipy.linalg.cho_solve`` take).

    Raises
    ------
    ValueError
        If ``a`` is not a writeable, contiguous, square float64 array, or (``check_finite``)
        holds NaN or infinity.
    numpy.linalg.LinAlgError
        If ``a`` is not positive definite (its leading minor of that order is not).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> c, lower = cho_factor(A.copy())
    >>> np.tril(c).tolist()
    [[2.0, 0.0], [1.0, 1.4142135623730951]]
    """
    _square_f64(a, "a")
    if a.flags.f_contiguous:
        f = a
    elif a.flags.c_contiguous:  # symmetric: its transpose is the same matrix in Fortran order
        f = a.T
    else:
        raise ValueError("`a` must be C- or Fortran-contiguous")
    if check_finite and not np.isfinite(a).all():
        raise ValueError("`a` must not contain NaN or infinity")
    if f.shape[0] == 0:
        return f, True
    n, info = ctypes.c_int(f.shape[0]), ctypes.c_int(0)
    _DPOTRF(b"L", ctypes.byref(n), f.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    if info.value > 0:
        raise np.linalg.LinAlgError(f"{info.value}-th leading minor of the array is not "
                                    "positive definite")
    if info.value < 0:  # pragma: no cover - argument error: a bug here, not bad data
        raise ValueError(f"dpotrf: illegal argument {-info.value}")
    return f, True


def _factor_of(cf, *, writeable: bool) -> np.ndarray:
    """Return the factor of a ``(c, lower)`` pair, checked: Fortran-ordered float64 square."""
    try:
        c, lower = cf
    except (TypeError, ValueError):
        raise ValueError("expected the (factor, lower) pair that cho_factor returns") from None
    if lower is not True:
        raise ValueError("takes a lower factor, the (factor, True) pair of cho_factor")
    _square_f64(c, "factor", writeable=writeable)
    if not c.flags.f_contiguous:
        raise ValueError("the factor must be Fortran-ordered, as cho_factor returns it")
    return c


def cho_solve(cf: tuple[np.ndarray, bool], b: np.ndarray) -> np.ndarray:
    """Solve A x = b from :func:`cho_factor`'s factor, without the GIL (LAPACK ``dpotrs``).

    Bit for bit ``scipy.linalg.cho_solve(cf, b)``.

    Parameters
    ----------
    cf : (ndarray of shape (n, n), bool)
        The factor and ``lower`` (True) from :func:`cho_factor` (Fortran-ordered float64).
    b : array_like of shape (n,) or (n, k), real
        Right-hand sides (not modified).

    Returns
    -------
    ndarray, shape of ``b``

    Raises
    ------
    ValueError
        If ``cf`` is not such a pair, or ``b`` is complex or has another number of rows.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(np.allclose(cho_solve(cho_factor(A.copy()), [1.0, 2.0]), np.linalg.solve(A, [1, 2])))
    True
    """
    c = _factor_of(cf, writeable=False)
    if np.iscomplexobj(b):
        raise ValueError("`b` must be real (the factor is of a real matrix)")
    x = np.array(b, dtype=np.float64, order="F", copy=True)
    x2 = x.reshape(-1, 1, order="F") if x.ndim == 1 else x
    if x2.ndim != 2 or x2.shape[0] != c.shape[0]:
        raise ValueError(f"`b` must have {c.shape[0]} rows, got shape {np.shape(b)}")
    n, k, info = ctypes.c_int(c.shape[0]), ctypes.c_int(x2.shape[1]), ctypes.c_int(0)
    if n.value and k.value:
        _DPOTRS(b"L", ctypes.byref(n), ctypes.byref(k), c.ctypes.data, ctypes.byref(n),
                x2.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    if info.value != 0:  # pragma: no cover - argument error
        raise ValueError(f"dpotrs: illegal argument {-info.value}")
    return x


def cho_inverse(cf: tuple[np.ndarray, bool]) -> np.ndarray:
    """A⁻¹ (full, symmetric) from :func:`cho_factor`'s factor, in place (LAPACK ``dpotri``).

    The factor's memory is overwritten by the inverse; the returned array is new. Equals
    ``scipy.linalg.lapack.dpotri`` on the same factor, symmetrised from its lower triangle.

    Parameters
    ----------
    cf : (ndarray of shape (n, n), bool)
        From :func:`cho_factor` (Fortran-ordered, writeable float64); destroyed.

    Returns
    -------
    ndarray of shape (n, n)

    Raises
    ------
    ValueError
        If ``cf`` is not such a pair.
    numpy.linalg.LinAlgError
        If the factor has a zero on its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(np.allclose(cho_inverse(cho_factor(A.copy())), np.linalg.inv(A)))
    True
    """
    c = _factor_of(cf, writeable=True)
    n, info = ctypes.c_int(c.shape[0]), ctypes.c_int(0)
    if n.value:
        _DPOTRI(b"L", ctypes.byref(n), c.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    if info.value != 0:
        raise np.linalg.LinAlgError(f"dpotri: the factor is singular (info {info.value})")
    return np.tril(c) + np.tril(c, -1).T


class NotPositiveDefiniteError(np.linalg.LinAlgError):
    """The matrix handed to :class:`SPDFactor` is not (numerically) positive definite."""


class SPDFactor:
    """Factor of a symmetric positive-definite matrix Q, dense or sparse.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix of shape (n, n)
        Symmetric positive definite. A dense array is Cholesky-factorised; a sparse matrix
        is LU-factorised by SuperLU in symmetric mode.

    Attributes
    ----------
    logdet : float
        log|Q|.

    Raises
    ------
    NotPositiveDefiniteError
        If a pivot is not positive.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> Q = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> f = SPDFactor(sp.csc_matrix(Q))
    >>> round(f.logdet, 6) == round(float(np.log(11.0)), 6)
    True
    >>> np.allclose(f.solve(np.array([1.0, 2.0])), np.linalg.solve(Q, [1.0, 2.0]))
    True
    """

    def __init__(self, Q):
        if sp.issparse(Q):
            self._lu = splu(sp.csc_matrix(Q), permc_spec="MMD_AT_PLUS_A",
                            diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            u = self._lu.U.diagonal()
            if np.any(u <= 0) or np.any(self._lu.perm_r != self._lu.perm_c):
                raise NotPositiveDefiniteError("sparse precision is not positive definite")
            self.logdet = float(np.log(u).sum())
            self._dense = None
        else:
            try:
                self._dense = cho_factor(np.array(Q, dtype=np.float64, order="F"),
                                         check_finite=False)
            except np.linalg.LinAlgError as exc:
                raise NotPositiveDefiniteError("dense precision is not positive definite") \
                    from exc
            self.logdet = 2.0 * float(np.log(np.diag(self._dense[0])).sum())
            self._lu = None

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Return Q⁻¹ b for b of shape (n,) or (n, k)."""
        if self._dense is not None:
            return cho_solve(self._dense, b)
        return self._lu.solve(np.asarray(b, dtype=float))
