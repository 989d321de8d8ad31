"""Which records a release publishes, in which row order, and under which ids.

docs/release.md, "Released ids". A confidential file's ids and row order are often not
neutral: the bundled Sacramento sales are numbered in price order within each sale day, so
releasing the ids (or the rows in file order) beside the synthetic prices would rank the true
prices. Under ``[data] release_ids = "pseudonymous"`` (the default) the released id column
holds 1, …, n in a random row order: a permutation drawn from a stream of the run's seed (a
key, kept in ``confidential/``) and the SHA-256 of the confidential response, so the same spec,
data and seed give the same files, and no one without the confidential data can undo it, even
when the spec's seed is small enough to guess. The map from released to confidential ids is
written to ``confidential/release_ids.csv`` for the board (and for ``--previous``, which links
releases through it; its SHA-256 is in release.json). ``"original"`` releases the confidential
ids in file order, for files whose ids are already public pseudonyms.

Under ``[anonymity] treatment = "apply"`` withheld records are left out first; the released
locations are the published ones (group centroid, cell centre).
"""

from __future__ import annotations

from dataclasses import dataclass

import geopandas
import numpy as np
import pandas as pd

from synthgeo._seed import keyed_permutation
from synthgeo.pipeline.previous import ID_MAP_FILE  # the layout --previous reads back

__all__ = ["ReleasedRecords", "released_records", "ID_MAP_FILE", "RELEASE_IDS_SPAWN_KEY"]

#: Spawn key of the row permutation's stream under the run's seed (independent of the
#: synthesis streams, which are spawned from the same seed in order).
RELEASE_IDS_SPAWN_KEY = 0x1D5


@dataclass(frozen=True, kw_only=True, eq=False)
class ReleasedRecords:
    """The published records' whitelisted columns, in release order.

    Attributes
    ----------
    base : pandas.DataFrame
        Shape (n_released, n_columns): the id column (pseudonyms 1..n or the confidential
        ids), the original coordinate columns (CSV input) and the covariates (and
        ``location_disposal``, ``location_cell_m`` under ``treatment = "apply"``).
    geometry : geopandas.GeoSeries
        The released locations, in the input's CRS, in release order.
    rows : ndarray of int, shape (n_released,)
        Position of each released row among the confidential records: values of record
        ``rows[i]`` are released in row ``i`` (index the (implicate, record) arrays with it).
    kind : {"pseudonymous", "original"}
    id_map : pandas.DataFrame or None
        ``release_id`` and the confidential id column, one row per released record, for
        ``confidential/`` (None under ``"original"``).
    """

    base: pd.DataFrame
    geometry: geopandas.GeoSeries
    rows: np.ndarray
    kind: str
    id_map: pd.DataFrame | None


def _permutation(n: int, seed, y: np.ndarray) -> np.ndarray:
    """Return a permutation of range(n) keyed by the run seed and the confidential values.

    The seed alone would do for determinism, but a seed written in a spec may be small
    (the bundled example's is 20181): trying every small seed against the released implicates
    (e.g. the autocorrelation of their per-id means in candidate order) finds it in seconds.
    Mixing in the SHA-256 of the confidential response, which is in no released file, keeps
    the same spec, data and seed giving the same files while no one without the confidential
    data can try seeds (:func:`synthgeo._seed.keyed_permutation`).
    """
    if seed is None:
        raise ValueError("pseudonymous release ids need the run's seed (got None)")
    return keyed_permutation(n, seed, y, RELEASE_IDS_SPAWN_KEY)


def released_records(spec, data, locations, seed) -> ReleasedRecords:
    """Return the records a release publishes, their columns, order and ids.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[data]`` x, y, covariates and ``release_ids``.
    data : PreparedData
        The confidential records (``gdf``, ``record_id``, ``id_column``).
    locations : LocationDiagnostics or None
        Its ``treatment`` decides withheld and moved records (``[anonymity] treatment``).
    seed : int or numpy.random.SeedSequence
        The run's seed (a key): the row permutation's stream under ``"pseudonymous"``.

    Returns
    -------
    ReleasedRecords

    Raises
    ------
    ValueError
        ``"pseudonymous"`` ids without a seed.

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> from types import SimpleNamespace
    >>> gdf = geopandas.GeoDataFrame({"id": [11, 12, 13], "a": [1.0, 2.0, 3.0]},
    ...     geometry=geopandas.points_from_xy([0, 1, 2], [0, 0, 0]), crs=32610)
    >>> data = SimpleNamespace(gdf=gdf, record_id=gdf["id"].to_numpy(), id_column="id",
    ...                        y=np.array([11.2, 12.5, 11.9]))
    >>> spec = SimpleNamespace(data=SimpleNamespace(x=None, y=None, covariates=["a"],
    ...                                             release_ids="pseudonymous"))
    >>> r = released_records(spec, data, None, seed=5)
    >>> r.base["id"].tolist(), sorted(r.id_map["id"].tolist())
    ([1, 2, 3], [11, 12, 13])
    >>> bool((r.base["a"].to_numpy() == gdf["a"].to_numpy()[r.rows]).all())
    True
    """
    d = spec.data
    loc_cols = [c for c in (d.x, d.y) if c]
    base = pd.DataFrame({data.id_column: data.record_id})
    for c in loc_cols + list(d.covariates):
        base[c] = data.gdf[c].to_numpy()
    src_crs = data.gdf.attrs.get("source_crs") or data.gdf.crs
    geom = data.gdf.geometry.to_crs(src_crs).reset_index(drop=True)
    rows = np.arange(len(base))
    treated = getattr(locations, "treatment", None)
    if treated is not None and treated.treatment == "apply":  # the published locations
        view = treated.release_view(data.gdf, tuple(loc_cols))
        keep, geom = view["keep"], view["geometry"]
        rows = np.flatnonzero(keep)
        base = base.loc[keep].reset_index(drop=True).assign(**view["columns"], **view["extra"])
    geom = geopandas.GeoSeries(geom).reset_index(drop=True)
    kind = getattr(d, "release_ids", "original")
    if kind != "pseudonymous":
        return ReleasedRecords(base=base, geometry=geom, rows=rows, kind="original",
                               id_map=None)
    order = _permutation(len(base), seed, data.y)
    confidential_ids = base[data.id_column].to_numpy()[order]
    base = base.iloc[order].reset_index(drop=True)
    base[data.id_column] = np.arange(1, len(base) + 1)
    id_map = pd.DataFrame({"release_id": base[data.id_column].to_numpy(),
                           data.id_column: confidential_ids})
    if data.id_column == "release_id":
        id_map.columns = ["release_id", "confidential_id"]
    return ReleasedRecords(base=base, geometry=geom.iloc[order].reset_index(drop=True),
                           rows=rows[order], kind="pseudonymous", id_map=id_map)
