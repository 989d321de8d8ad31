"""Synthesis and risk that stream: implicates made, scored and written chunk by chunk.

For N x L beyond memory (10⁶ records x 500 implicates is 4 GB of float64), the implicates
are a Dask array chunked along ``implicate``; each chunk is drawn, scored against the truth
and written to Zarr, then dropped, so peak memory is a few chunks whatever L is. The same graph
runs on the local threaded scheduler or on a ``dask.distributed`` cluster::

    from synthgeo.synthesis.stream import stream_release
    out = stream_release(draws, X, y, site_index, scale, path="implicates.zarr",
                         scheduler="tcp://10.0.0.5:8786")   # or None: local threads

Each implicate's error draw has its own seed (``SeedSequence(seed).spawn(L)[ℓ]``), so the
files do not depend on the chunking or on the scheduler. Formulas as
:mod:`synthgeo.synthesis.implicates` (docs/model.md, "Synthesis") and :mod:`synthgeo.risk.within_eps` (docs/risk-and-utility.md).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import xarray as xr

from synthgeo._seed import seed_sha256

__all__ = ["PosteriorDraws", "implicates_dask", "stream_release", "StreamResult"]


@dataclass(frozen=True, kw_only=True)
class PosteriorDraws:
    """The posterior draws that become implicates (one row per implicate ℓ).

    Attributes
    ----------
    beta : ndarray of shape (L, p)
    nugget : ndarray of shape (L,)
        τ² (response units²).
    w : ndarray or dask.array.Array of shape (L, S)
        Spatial effects before the D scaling; a Dask array chunked along the first axis keeps
        them out of memory too (e.g. ``dask.array.from_zarr``).
    """

    beta: np.ndarray
    nugget: np.ndarray
    w: object

    @property
    def n_implicates(self) -> int:
        """L."""
        return int(self.beta.shape[0])


def _block(w_block, beta, nugget, X, site_index, scale, seeds, block_info=None):
    lo, hi = block_info[0]["array-location"][0]
    d = scale[lo:hi] if scale.ndim == 2 else scale  # per-implicate D (gamma = "auto")
    out = (beta[lo:hi] @ X.T) + (np.asarray(w_block) * d)[:, site_index]
    for j, ell in enumerate(range(lo, hi)):
        rng = np.random.default_rng(seeds[ell])
        out[j] += rng.standard_normal(X.shape[0]) * np.sqrt(nugget[ell])
    return out


def implicates_dask(draws: PosteriorDraws, X: np.ndarray, site_index: np.ndarray,
                    scale: np.ndarray, *, seed: int, chunk: int = 10) -> da.Array:
    """Lazy implicates Y†^(ℓ) = Xβ^(ℓ) + A D w^(ℓ) + e^(ℓ), shape (L, N), chunked by implicate.

    Parameters
    ----------
    draws : PosteriorDraws
    X : ndarray of shape (N, p)
    site_index : ndarray of int, shape (N,)
    scale : ndarray of shape (S,) or (L, S)
        D's diagonal, or one per implicate when D depends on the draw (γ = "auto";
        :meth:`synthgeo.inference.result.GPFit.scales`).
    seed : int
        Seed of the error draws (one child seed per implicate).
    chunk : int, default=10
        Implicates per chunk.

    Returns
    -------
    dask.array.Array of shape (L, N), float64
    """
    L = draws.n_implicates
    w = draws.w if isinstance(draws.w, da.Array) else da.from_array(np.asarray(draws.w))
    w = w.rechunk((chunk, -1))
    seeds = np.random.SeedSequence(seed).spawn(L)
    return da.map_blocks(
        _block, w, beta=np.asarray(draws.beta), nugget=np.asarray(draws.nugget), X=X,
        site_index=np.asarray(site_index), scale=np.asarray(scale, float), seeds=seeds,
        chunks=(w.chunks[0], (X.shape[0],)), dtype=float,
    )


@dataclass(frozen=True, kw_only=True)
class StreamResult:
    """What a streamed synthesis leaves in memory: per-record risk, not the implicates.

    Attributes
    ----------
    path : Path
        The Zarr store (``y_synthetic`` (implicate, record)).
    risk_abs : ndarray of shape (N, n_eps)
        Share of implicates within ``eps`` of the truth, on the back-transformed scale.
    risk_rel : ndarray of shape (N, n_p)
        Share within the relative tolerance ``p``.
    implicate_mean : ndarray of shape (N,)
        Average of the implicates per record (model scale): the implicate-average attack.
    """

    path: Path
    risk_abs: np.ndarray
    risk_rel: np.ndarray
    implicate_mean: np.ndarray


def stream_release(
    draws: PosteriorDraws,
    X: np.ndarray,
    y: np.ndarray,
    site_index: np.ndarray,
    scale: np.ndarray,
    *,
    path: str | Path,
    seed: int,
    eps: tuple[float, ...] = (10_000.0,),
    p: tuple[float, ...] = (0.1,),
    transform: str = "exp",
    chunk: int = 10,
    record_id: np.ndarray | None = None,
    dtype: str = "float64",
    scheduler: str | None = None,
) -> StreamResult:
    """Draw, score and write L implicates chunk by chunk (one pass over the data).

    Parameters
    ----------
    draws : PosteriorDraws
    X : ndarray of shape (N, p)
    y : ndarray of shape (N,)
        Confidential response (model scale); used for the risk only, never written.
    site_index, scale
        As :func:`implicates_dask`.
    path : str or Path
        Zarr store to create; refused if it exists (never overwrites).
    seed : int
    eps, p : tuple of float
        Absolute (back-transformed units, e.g. dollars) and relative tolerances of the
        within-ε risk (docs/risk-and-utility.md; Quick et al. 2018, Sect. 4).
    transform : {"exp", "identity"}
        Back-transform g to the scale of ``eps``.
    chunk : int, default=10
    record_id : ndarray of shape (N,), optional
    dtype : {"float64", "float32"}
        Storage type in Zarr (the risk is scored in float64 before any cast).
    scheduler : str, optional
        Address of a ``dask.distributed`` scheduler (e.g. ``"tcp://host:8786"``); ``None`` runs
        on the local threaded scheduler.

    Returns
    -------
    StreamResult

    Raises
    ------
    FileExistsError
        If ``path`` exists.
    ValueError
        For an unknown ``transform`` or ``dtype``.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; choose a new path (nothing is overwritten)")
    if transform not in ("exp", "identity"):
        raise ValueError(f"`transform` must be 'exp' or 'identity', got {transform!r}")
    if dtype not in ("float64", "float32"):
        raise ValueError(f"`dtype` must be 'float64' or 'float32', got {dtype!r}")
    g = np.exp if transform == "exp" else (lambda v: v)
    ysyn = implicates_dask(draws, X, site_index, scale, seed=seed, chunk=chunk)
    L = draws.n_implicates
    gy = g(np.asarray(y, float))
    gsyn = da.exp(ysyn) if transform == "exp" else ysyn
    diff = abs(gsyn - gy[None, :])
    risk_abs = da.stack([(diff <= e).sum(axis=0) for e in eps], axis=1) / L
    risk_rel = da.stack([(diff <= q * np.abs(gy)[None, :]).sum(axis=0) for q in p], axis=1) / L
    mean = ysyn.mean(axis=0)
    rid = np.arange(X.shape[0]) if record_id is None else np.asarray(record_id)
    ds = xr.Dataset(
        {"y_synthetic": (("implicate", "record"), ysyn.astype(dtype))},
        coords={"implicate": np.arange(1, L + 1), "record": rid},
        attrs={"synthgeo": "partially synthetic implicates (model scale)",
               "seed_sha256": seed_sha256(seed)},  # the seed itself is a key: never stored
    )
    write = ds.to_zarr(path, mode="w-", compute=False, consolidated=False)
    ctx = contextlib.nullcontext()
    if scheduler is not None:
        from distributed import Client

        ctx = Client(scheduler)
    with ctx:
        _, r_abs, r_rel, m = dask.compute(write, risk_abs, risk_rel, mean)
    return StreamResult(path=path, risk_abs=np.asarray(r_abs), risk_rel=np.asarray(r_rel),
                        implicate_mean=np.asarray(m))
