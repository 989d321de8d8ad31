"""The stored synthesiser: both fits' posterior draws, to draw more implicates later.

``synthgeo run`` writes ``confidential/synthesiser.nc`` (never ``release/``): an ArviZ
InferenceData netCDF (written as ArviZ writes one, without importing it:
:func:`synthgeo.inference.netcdf.write_inference_netcdf`) whose ``posterior`` group holds
each model's parameter draws with a leading ``model`` coordinate after (``chain``, ``draw``)
— σ² (``sigma2``), τ² (``nugget``), the effective range (``range``, metres), φ (``phi``,
1/metre) and β (``beta``, per ``coef``), and the spatial effects w (``w``, per ``site``) only
where the engine stored them (NUTS); a grid fit's w are drawn again on demand from the records
and the fit's own seed (:func:`synthgeo.inference.grid.grid_fit_from_draws`), so no
per-record array is stored. ``sample_stats`` holds ``implicate_used`` (chain, draw): the
draws an implicate of this release or an earlier one of its chain came from (and a risk
rule's selection draws), and ``implicate_of_release`` (chain, draw): those of this release's
implicates. ``synthgeo draw`` (:mod:`synthgeo.pipeline.draw`) takes its new implicates from
the other draws. The file is confidential: the fits are of the confidential responses, and its
attributes hold the fits' seed (a key, as ``confidential/seed.txt``) and the SHA-256 of the
records it was fitted to.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from synthgeo._errors import InputError
from synthgeo.inference.netcdf import write_inference_netcdf
from synthgeo.inference.result import GPFit
from synthgeo.io.jsonable import jsonable

__all__ = ["SYNTHESISER_FILE", "StoredSynthesiser", "save_synthesiser", "load_synthesiser",
           "records_sha256", "check_records", "unused_draw_index", "PHI_QUANTILES"]

#: The stored synthesiser's file name under ``confidential/``.
SYNTHESISER_FILE = "synthesiser.nc"
#: The φ quantiles kept (the at-risk rule's M and its sensitivity read these three).
PHI_QUANTILES = (0.05, 0.5, 0.95)
#: Parameters stored per draw (w only where the fit holds it).
_VARIABLES = ("sigma2", "nugget", "range", "phi", "beta", "w")


def records_sha256(y: np.ndarray, X: np.ndarray) -> str:
    """SHA-256 of the response and design a fit was made on (float64 bytes, in order).

    Examples
    --------
    >>> len(records_sha256(np.zeros(3), np.ones((3, 2))))
    64
    """
    h = hashlib.sha256()
    for a in (y, X):
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def check_records(y: np.ndarray, X: np.ndarray, expected: str) -> None:
    """Refuse records whose :func:`records_sha256` is not ``expected`` (a stored synthesiser's).

    Raises
    ------
    synthgeo.InputError
        The records differ (another input file, ``[data] query`` or values); the message
        shows no value.

    Examples
    --------
    >>> y, X = np.zeros(3), np.ones((3, 2))
    >>> check_records(y, X, records_sha256(y, X))
    """
    if records_sha256(y, X) != expected:
        raise InputError("draw: the records differ from the ones the release was fitted to "
                         "(another input file, `[data] query` or values); draw needs the "
                         "release's own confidential data")


class StoredPhiQuantiles:
    """φ's posterior quantiles as the original fit gave them (a fit rebuilt from its draws).

    A grid fit's φ quantiles come from its continuous posterior, not from the draws
    (:meth:`GPFit.phi_quantiles`); a fit rebuilt from the stored draws answers with the stored
    values, so M and the at-risk set are the original release's.
    """

    def __init__(self, q: Sequence[float], values: Sequence[float]) -> None:
        self._table = {round(float(a), 12): float(v) for a, v in zip(q, values)}

    def quantiles(self, name: str, q) -> np.ndarray:
        """Return the stored quantiles of ``phi_per_m`` at ``q`` (those in PHI_QUANTILES)."""
        qs = np.atleast_1d(np.asarray(q, float))
        missing = [a for a in qs if round(float(a), 12) not in self._table]
        if name != "phi_per_m" or missing:
            raise ValueError(f"the stored synthesiser keeps phi's quantiles at {PHI_QUANTILES} "
                             f"only, not {name!r} at {missing}")
        out = np.array([self._table[round(float(a), 12)] for a in qs])
        return out if np.ndim(q) else out[0]


@dataclass(frozen=True, kw_only=True, eq=False)
class StoredSynthesiser:
    """A release's stored synthesiser (:func:`load_synthesiser`).

    Attributes
    ----------
    posterior : xarray.Dataset
        Dims (chain, draw, model, ...); one model's draws by :meth:`model_posterior`.
    used : ndarray of bool, shape (chain, draw)
        Draws an implicate of the chain of releases came from.
    of_release : ndarray of bool, shape (chain, draw)
        Draws this release's implicates came from.
    engine : dict of str to dict
        Each model's ``engine`` (JSON-safe).
    fit_seed : int
        The ``random_seed`` both fits were given (common random numbers): w of a grid fit is
        drawn again under it. Confidential.
    phi_quantiles : dict of str to list of float
        φ (1/metre) at :data:`PHI_QUANTILES`, per model.
    records_sha256 : str
        :func:`records_sha256` of the unrestricted fit's y and X.
    """

    posterior: xr.Dataset = field(repr=False)
    used: np.ndarray = field(repr=False)
    of_release: np.ndarray = field(repr=False)
    engine: dict
    fit_seed: int = field(repr=False)
    phi_quantiles: dict = field(repr=False)
    records_sha256: str = field(repr=False)

    @property
    def n_draws(self) -> int:
        """Posterior draws per model (chains × draws)."""
        return int(self.used.size)

    @property
    def n_unused(self) -> int:
        """Draws no implicate has come from."""
        return int((~self.used).sum())

    def model_posterior(self, model: str) -> xr.Dataset:
        """One model's posterior draws (chain, draw, ...), as its fit held them."""
        post = self.posterior.sel(model=model, drop=True)
        if "w" in post and bool(np.isnan(post["w"].values).all()):
            post = post.drop_vars("w")
        return post


def save_synthesiser(path: str | os.PathLike, fits: dict[str, GPFit], *,
                     used: np.ndarray, of_release: np.ndarray, fit_seed: int, y: np.ndarray,
                     X: np.ndarray) -> Path:
    """Write the fits' parameter draws and the used draws as InferenceData netCDF.

    Parameters
    ----------
    path : path
        The file (``confidential/synthesiser.nc``).
    fits : dict of str to GPFit
        ``unrestricted`` and ``restricted`` (the same chain × draw shape).
    used : ndarray of int
        Flattened (chain-major) indices of the draws implicates came from, over the chain of
        releases.
    of_release : ndarray of int
        Those of this release's implicates (a subset of ``used``).
    fit_seed : int
        The ``random_seed`` both fits were given.
    y : ndarray of shape (n_records,)
    X : ndarray of shape (n_records, n_coef)
        The records the unrestricted fit was made on (only their SHA-256 is stored).

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        If the fits' draws differ in shape.
    """
    names = list(fits)
    posts = [fits[m].posterior for m in names]
    shape = {(p.sizes["chain"], p.sizes["draw"]) for p in posts}
    if len(shape) != 1:
        raise ValueError(f"the fits' posteriors differ in (chain, draw) shape: {sorted(shape)}")
    n_chain, n_draw = shape.pop()
    has_w = [("w" in p) for p in posts]
    parts = []
    for p in posts:
        keep = p[[v for v in _VARIABLES if v in p and (v != "w" or any(has_w))]]
        if any(has_w) and "w" not in keep:
            keep = keep.assign(w=xr.full_like(posts[has_w.index(True)]["w"], np.nan))
        parts.append(keep.drop_vars([c for c in keep.coords
                                     if c not in ("chain", "draw", "coef", "site")]))
    posterior = xr.concat(parts, dim=xr.DataArray(names, dims="model", name="model"))
    posterior = posterior.transpose("chain", "draw", "model", ...)
    def flags(index) -> np.ndarray:
        out = np.zeros(n_chain * n_draw, dtype=bool)
        out[np.asarray(index, dtype=int)] = True
        return out.reshape(n_chain, n_draw)

    if not np.isin(of_release, used).all():
        raise ValueError("`of_release` must be a subset of `used`")
    stats = xr.Dataset({"implicate_used": (("chain", "draw"), flags(used)),
                        "implicate_of_release": (("chain", "draw"), flags(of_release))},
                       coords={"chain": posterior["chain"].values,
                               "draw": posterior["draw"].values})
    posterior.attrs = {
        "synthgeo_synthesiser": 1,
        "engine": json.dumps({m: jsonable(fits[m].engine) for m in names}),
        "fit_seed": str(int(fit_seed)),
        "phi_quantiles": json.dumps({m: [float(v) for v in fits[m].phi_quantiles(PHI_QUANTILES)]
                                     for m in names}),
        "records_sha256": records_sha256(y, X),
    }
    path = Path(path)
    write_inference_netcdf(path, {"posterior": posterior, "sample_stats": stats})
    return path


def load_synthesiser(path: str | os.PathLike) -> StoredSynthesiser:
    """Read :func:`save_synthesiser`'s file.

    Raises
    ------
    ValueError
        If the file is not a stored synthesiser.
    """
    path = Path(path)
    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        posterior = ds.load()
    with xr.open_dataset(path, group="sample_stats", engine="h5netcdf") as ds:
        used = ds["implicate_used"].values.astype(bool)
        of_release = ds["implicate_of_release"].values.astype(bool)
    a = posterior.attrs
    if int(a.get("synthgeo_synthesiser", 0)) != 1:
        raise ValueError(f"{path.name} is not a synthgeo stored synthesiser")
    return StoredSynthesiser(posterior=posterior, used=used, of_release=of_release,
                             engine=json.loads(a["engine"]),
                             fit_seed=int(a["fit_seed"]),
                             phi_quantiles=json.loads(a["phi_quantiles"]),
                             records_sha256=str(a["records_sha256"]))


def unused_draw_index(used: np.ndarray, n_implicates: int) -> np.ndarray:
    """Return ``n_implicates`` draws no implicate used, evenly spread, flattened chain-major.

    Parameters
    ----------
    used : ndarray of bool, shape (chain, draw)
    n_implicates : int

    Returns
    -------
    ndarray of int, shape (n_implicates,)

    Raises
    ------
    ValueError
        If fewer unused draws are left than asked for.

    Examples
    --------
    >>> used = np.zeros((2, 5), bool)
    >>> used.ravel()[[0, 4, 9]] = True
    >>> unused_draw_index(used, 3).tolist()
    [1, 5, 8]
    """
    rest = np.flatnonzero(~np.asarray(used, bool).ravel())
    if n_implicates > rest.size:
        raise ValueError(f"{rest.size} unused posterior draws are left, {n_implicates} asked for")
    return rest[np.unique(np.round(np.linspace(0, rest.size - 1, n_implicates)).astype(int))]
