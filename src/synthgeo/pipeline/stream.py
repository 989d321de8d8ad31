"""Synthesis and risk that stream: implicates made, scored and written to Zarr block by block.

For N x L beyond memory (10⁶ records x 500 implicates is 4 GB of float64) the implicates of
:mod:`synthgeo.synthesis.implicates` are drawn a block of implicates at a time, scored against
the truth (:class:`synthgeo.risk.within_eps.RiskTally`) and written to a Zarr store, then
dropped, so peak memory is a few blocks whatever L is. The blocks are the in-memory route's
blocks (same formula, same per-implicate seeds), computed here or on a ``dask.distributed``
cluster::

    from synthgeo.synthesis.implicates import ImplicateDraws
    from synthgeo.pipeline.stream import stream_release
    draws = ImplicateDraws.from_fit(fit, 500, at_risk_effect="kriged")
    out = stream_release(draws, X, y, site_index, path="implicates.zarr", seed=1,
                         scheduler="tcp://10.0.0.5:8786")   # or None: this process

so the store and the risk equal :func:`synthgeo.synthesis.implicates.draw_implicates` and
:func:`synthgeo.risk.within_eps.within_eps_risk` for the same seed (docs/model.md,
"Synthesis"; docs/risk-and-utility.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from synthgeo._seed import seed_sha256
from synthgeo.risk.within_eps import RiskResult, RiskTally
from synthgeo.synthesis.implicates import DEFAULT_CHUNK, ImplicateDraws, implicate_blocks

__all__ = ["stream_release", "StreamResult"]


@dataclass(frozen=True, kw_only=True)
class StreamResult:
    """What a streamed synthesis leaves in memory: per-record risk, not the implicates.

    Attributes
    ----------
    path : Path
        The Zarr store (``y_synthetic`` (implicate, record), model scale).
    risk : RiskResult
        Within-ε risk and the implicate-average attack per record, equal to
        :func:`synthgeo.risk.within_eps.within_eps_risk` on the same implicates.
    """

    path: Path
    risk: RiskResult


def _seed_hash(seed: int | np.random.SeedSequence) -> str:
    """Return the SHA-256 of an int seed or of a SeedSequence's entropy and spawn key.

    Ints as :func:`synthgeo._seed.seed_sha256` (the release record's ``seed_sha256``).
    """
    if isinstance(seed, np.random.SeedSequence):
        text = f"{seed.entropy}:{','.join(map(str, seed.spawn_key))}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return seed_sha256(seed)


def _empty_store(path: Path, L: int, record: np.ndarray, chunk: int, dtype: str,
                 seed) -> None:
    """Create the store's metadata: ``y_synthetic`` (L, N) chunked by ``chunk`` implicates."""
    import dask.array as da

    template = da.zeros((L, record.size), chunks=(chunk, record.size), dtype=dtype)
    ds = xr.Dataset(
        {"y_synthetic": (("implicate", "record"), template)},
        coords={"implicate": np.arange(1, L + 1), "record": record},
        # the seed is a key (docs/release.md): only its hash is stored
        attrs={"synthgeo": "partially synthetic implicates (model scale)",
               "seed_sha256": _seed_hash(seed)},
    )
    ds.to_zarr(path, mode="w-", compute=False, consolidated=False)


def stream_release(
    draws: ImplicateDraws,
    X: np.ndarray,
    y: np.ndarray,
    site_index: np.ndarray,
    *,
    path: str | Path,
    seed: int | np.random.SeedSequence,
    eps: tuple[float, ...] = (10_000.0,),
    p: tuple[float, ...] = (0.1,),
    transform: str = "exp",
    chunk: int = DEFAULT_CHUNK,
    record_id: np.ndarray | None = None,
    dtype: str = "float64",
    scheduler=None,
) -> StreamResult:
    """Draw, score and write L implicates block by block (one pass).

    Parameters
    ----------
    draws : ImplicateDraws
        E.g. :meth:`ImplicateDraws.from_fit` (``at_risk_effect`` "zero" or "kriged").
    X : ndarray of shape (N, p)
    y : ndarray of shape (N,)
        Confidential response (model scale); used for the risk only, never written.
    site_index : ndarray of int, shape (N,)
    path : str or Path
        Zarr store to create; refused if it exists (never overwrites).
    seed : int or SeedSequence
        Root of the per-implicate seeds (as :func:`~synthgeo.synthesis.implicates.
        draw_implicates`'s ``random_seed``).
    eps, p : tuple of float
        Absolute (back-transformed units, e.g. dollars) and relative tolerances of the
        within-ε risk (docs/risk-and-utility.md; Quick et al. 2018, Sect. 4).
    transform : {"exp", "identity"}
        Back-transform g to the scale of ``eps``.
    chunk : int, default=DEFAULT_CHUNK
        Implicates per block (and per Zarr chunk); the values do not depend on it.
    record_id : ndarray of shape (N,), optional
    dtype : {"float64", "float32"}
        Storage type in Zarr (the risk is scored in float64 before any cast).
    scheduler : str, distributed.Client or None
        Address of a ``dask.distributed`` scheduler (e.g. ``"tcp://host:8786"``); ``None``
        computes the blocks in this process.

    Returns
    -------
    StreamResult

    Raises
    ------
    FileExistsError
        If ``path`` exists.
    ValueError
        For an unknown ``transform`` or ``dtype``, or bad tolerances.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; choose a new path (nothing is overwritten)")
    if dtype not in ("float64", "float32"):
        raise ValueError(f"`dtype` must be 'float64' or 'float32', got {dtype!r}")
    tally = RiskTally(y, eps=eps, p=p, transform=transform)
    record = np.arange(X.shape[0]) if record_id is None else np.asarray(record_id)
    _empty_store(path, draws.n_implicates, record, chunk, dtype, seed)
    for lo, block in implicate_blocks(draws, X, site_index, seed=seed, chunk=chunk,
                                      scheduler=scheduler):
        tally.add(block)
        part = xr.Dataset({"y_synthetic": (("implicate", "record"), block.astype(dtype))})
        part.to_zarr(path, region={"implicate": slice(lo, lo + block.shape[0]),
                                   "record": slice(None)},
                     consolidated=False)
    return StreamResult(path=path, risk=tally.result(record=record))
