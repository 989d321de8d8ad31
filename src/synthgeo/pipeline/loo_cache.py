"""One run's leave-out predictives, computed once and served to every stage and round.

A cross-fitted round draws its implicates from the leave-out predictive at the implicates'
posterior draws (:mod:`synthgeo.synthesis.cross_fit`); the risk stage scores against the same
predictive (and its block densities, for the leave-out posterior); input noise takes it as
the attacker's prior; and `protect = "targets"` repeats all of this in every round with the
same unrestricted fit and the same draws. Each is the same computation — a precision per
(φ, α) cell and a block solve per unit — so :func:`cached_loo` keeps, per fit, draws and leave-out
unit, the predictive, the calibration's own-value weights and the block log densities of the
first computation, and serves them (the same doubles, so identical results) to the later ones.
The cache keeps its own copies and serves fresh ones (identical doubles), so a caller may
overwrite what it is served; large arrays are kept in a temporary file (:mod:`synthgeo._spill`;
from about 10⁵ records at L = 100), not resident between the risk stage and a later round.

The cache lives for one :func:`synthgeo.pipeline.run.run_release` call (:func:`run_scope`): it
holds strong references to the fit and the data it was computed from, so an entry can never be
served for another object that reuses an id, and it is emptied when the call returns.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator

import numpy as np

from synthgeo import _spill
from synthgeo._spill import Spilled, spill
from synthgeo.risk.predictive import Predictive

__all__ = ["run_scope", "cached_loo", "update_loo", "remember_map", "cached_map",
           "cached_precision_function", "drop_precision_function"]

_ENTRIES: dict | None = None  # None outside a run: nothing is kept


@contextlib.contextmanager
def run_scope() -> Iterator[None]:
    """Keep the leave-out predictives for the duration of one run (nested calls share it)."""
    global _ENTRIES
    outer = _ENTRIES is not None
    if not outer:
        _ENTRIES = {}
    try:
        yield
    finally:
        if not outer:
            _ENTRIES = None


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def cached_loo(fit, data, draws: tuple[np.ndarray, np.ndarray], blocks: dict[str, np.ndarray],
               compute: Callable[[dict[str, np.ndarray]], dict[str, dict]]) -> dict[str, dict]:
    """Return unit → ``{"predictive", "own_weight", "log_density", "seconds"}`` for ``blocks``.

    Parameters
    ----------
    fit, data
        The fit and prepared data the predictive comes from (kept by reference).
    draws : (ndarray, ndarray)
        ``source_chain`` and ``source_draw`` of the implicates (which posterior draws).
    blocks : dict of str to ndarray of int
        Leave-out unit → its blocks.
    compute : callable
        ``blocks (the missing units) -> unit -> entry``: the computation for what is not kept.

    Returns
    -------
    dict of str to dict
        One entry per unit of ``blocks``; outside :func:`run_scope` everything is computed.
    """
    if _ENTRIES is None:
        return compute(blocks)
    key = (id(fit), id(data), _digest(*draws))
    slot = _ENTRIES.setdefault(key, {"fit": fit, "data": data, "units": {}})
    units = slot["units"]
    missing = {u: b for u, b in blocks.items()
               if u not in units or units[u][0] != _digest(np.asarray(b))}
    made = compute(missing) if missing else {}
    for u, entry in made.items():
        units[u] = (_digest(np.asarray(missing[u])), _keep(entry))
    return {u: made[u] if u in made else _serve(units[u][1]) for u in blocks}


def update_loo(fit, data, draws: tuple[np.ndarray, np.ndarray], unit: str, **fields) -> None:
    """Set ``fields`` (e.g. ``own_weight``) of ``unit``'s kept entry, if there is one."""
    if _ENTRIES is None:
        return
    slot = _ENTRIES.get((id(fit), id(data), _digest(*draws)))
    if slot is not None and unit in slot["units"]:
        digest, kept = slot["units"][unit]
        slot["units"][unit] = (digest, {**kept, **_keep(fields)})


def remember_map(fit, data, draws: tuple[np.ndarray, np.ndarray], blocks, M) -> None:
    """Keep M̄, the cross-fit's map averaged over the implicates' cells, for this run.

    Input noise builds every cell's map K for its own figures
    (:mod:`synthgeo.pipeline.synthesis_noise`); the release attacker reads the same average
    (:func:`synthgeo.pipeline.release_attack.released_map`), which :func:`cached_map` then
    serves instead of building every cell's precision and map a second time. Outside
    :func:`run_scope` nothing is kept.
    """
    if _ENTRIES is None:
        return
    key = (id(fit), id(data), _digest(*draws))
    slot = _ENTRIES.setdefault(key, {"fit": fit, "data": data, "units": {}})
    slot.setdefault("maps", {})[_digest(np.asarray(blocks))] = M


def cached_map(fit, data, draws: tuple[np.ndarray, np.ndarray], blocks):
    """Return the cross-fit's averaged map kept by :func:`remember_map`, or None."""
    if _ENTRIES is None:
        return None
    slot = _ENTRIES.get((id(fit), id(data), _digest(*draws)))
    return None if slot is None else slot.get("maps", {}).get(_digest(np.asarray(blocks)))


def cached_precision_function(data, n_neighbors: int, build: Callable[[], Callable]) -> Callable:
    """Return the NNGP precision function of ``data``'s records, built once per run.

    The leave-one-out baseline, input noise and the release attacker each need
    ``(φ, α) -> Q`` over the same records with the same neighbour count: its neighbour graph
    and sparsity pattern (:func:`synthgeo.risk.loo.nngp_precision`, several seconds at 10⁵
    records) are made by the first and served to the others. Outside :func:`run_scope`,
    ``build()`` every time.

    Parameters
    ----------
    data
        The prepared data (kept by reference, as :func:`cached_loo` keeps it).
    n_neighbors : int
    build : callable
        ``() -> precision_of``.

    Returns
    -------
    callable
    """
    if _ENTRIES is None:
        return build()
    key = ("nngp_precision", id(data), int(n_neighbors))
    if key not in _ENTRIES:
        _ENTRIES[key] = {"data": data, "function": build()}
    return _ENTRIES[key]["function"]


def drop_precision_function(data, n_neighbors: int) -> bool:
    """Stop keeping ``data``'s NNGP precision function when its pattern is large.

    The pattern (:class:`synthgeo.model.vecchia_kernel.PrecisionPattern`: about 1 GB at 10⁶
    records, m = 15) is kept from the leave-one-out baseline onwards; the scoring of both
    models, which holds the run's peak, does not read it. When the pattern's offsets alone
    reach :data:`synthgeo._spill.SPILL_BYTES` (from about 10⁵ records) it is let go here and
    the next stage that asks (the release attacker) builds it again: 30 s at 10⁶ records,
    measured. Smaller runs keep it. Returns whether it was dropped.
    """
    if _ENTRIES is None:
        return False
    key = ("nngp_precision", id(data), int(n_neighbors))
    offsets = data.n_records * (n_neighbors + 1) ** 2 * 2  # int16 (n, m + 1, m + 1)
    if key not in _ENTRIES or offsets < _spill.SPILL_BYTES:  # the threshold read now
        return False
    del _ENTRIES[key]
    return True


#: An entry's (L, n) arrays besides its predictive: kept on disk when large.
_LARGE = ("own_weight", "log_density")


def _stash(array: np.ndarray):
    """Return the cache's own copy of ``array``: on disk when large, else in memory."""
    kept = spill(array)
    return np.array(array, copy=True) if kept is array else kept


def _fetch(kept) -> np.ndarray:
    """Return a fresh copy of a stashed array (the caller may write into it)."""
    return kept.load() if isinstance(kept, Spilled) else np.array(kept, copy=True)


def _keep(entry: dict) -> dict:
    """Return ``entry`` as kept: its own copies of the large arrays (:mod:`synthgeo._spill`).

    The caller that computed the entry keeps the only reference to the arrays it was given,
    and every later caller gets fresh copies, so a caller may overwrite what it was served
    (the risk stage reweights its baseline in place) without changing what is kept.
    """
    out = dict(entry)
    pred = out.get("predictive")
    if pred is not None:
        out["predictive"] = (_stash(pred.mean), _stash(pred.sd), pred.name)
    for k in _LARGE:
        if out.get(k) is not None:
            out[k] = _stash(out[k])
    return out


def _serve(kept: dict) -> dict:
    """Return a kept entry as :func:`cached_loo` serves it (the same doubles, fresh copies)."""
    out = dict(kept)
    if out.get("predictive") is not None:
        mean, sd, name = out["predictive"]
        out["predictive"] = Predictive(mean=_fetch(mean), sd=_fetch(sd), name=name)
    for k in _LARGE:
        if out.get(k) is not None:
            out[k] = _fetch(out[k])
    return out
