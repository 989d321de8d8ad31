"""Write and read masking outputs: the masked layer with its JSON sidecar, and choose-k results.

"Mask once, reuse": a masked layer is written with its parameters (k, seed, input hashes and a
key over all of them) so that a later run can find it, check that it is unchanged (sha256 of
every file) and reuse it instead of drawing an independent mask, which would let an attacker
average the two. Folders are written atomically (temporary folder + rename) and an existing
folder is replaced only on request, and only when it holds an earlier output of the same kind.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo._errors import InputError, SpecError
from synthgeo._seed import keyed_permutation
from synthgeo.io.atomic import check_output_dir, write_folder
from synthgeo.io.files import keep_id_text
from synthgeo.io.jsonable import dumps
from synthgeo.io.provenance import file_sha256
from synthgeo.masking.donut import DonutMask
from synthgeo.masking.sweep import ChooseKResult

__all__ = ["MASK_SIDECAR", "CHOOSE_K_RECORD", "MASK_ID_MAP", "RELEASE_IDS", "inputs_key",
           "released_layer", "write_mask", "read_mask", "reuse_previous_mask", "write_choose_k",
           "check_output_dir"]

MASK_SIDECAR = "mask.json"
#: The map release id -> case id, beside mask.json (confidential), under "pseudonymous".
MASK_ID_MAP = "release_ids.csv"
#: What the published id column holds: release pseudonyms 1..n (default) or the case ids.
RELEASE_IDS = ("pseudonymous", "original")
#: Spawn key of the published row order's stream under the mask's seed (its other streams:
#: the displacements, ``default_rng(seed)``, and the evaluation, ``default_rng([seed, 2])``).
MASK_IDS_SPAWN_KEY = 0x3A5
#: What masking.json says of the published ids, per `release_ids`.
_IDS_TEXT = {
    "pseudonymous": "release pseudonyms 1..n in a random row order, not the case ids; the map "
                    "to the case ids is kept with the confidential record",
    "original": "the case ids as given (release_ids = original), in a random row order",
}
#: mask.json's warning when the case ids are published.
ORIGINAL_IDS_WARNING = (
    "the published layer carries the case ids as given (--release-ids original): publish it "
    "only if those ids are already public pseudonyms, since ids numbered in file order, by "
    "date or by area rank the cases and raise the attacker's success above the figures in "
    "this record (break-it trial 2026-12-07)")
CHOOSE_K_RECORD = "choose_k.json"
_LAYER = {"parquet": "masked.parquet", "gpkg": "masked.gpkg"}
#: How masking.json describes each method (public: the method is assumed known).
METHOD_TEXT = {
    "donut": "donut geomask to k households: each point moved in a uniform random direction by "
             "a distance uniform in area between 0.5 r_k and r_k, r_k the distance to its k-th "
             "nearest household (Hampton et al. 2010, doi:10.1093/aje/kwq248)",
    "areal": "areal mask to k households: each point published uniformly at random within its "
             "area, the areas a partition of the household layer (clipped to the study region "
             "when one is given) into rectangles of at least k households, built from the root "
             "rectangle in 'partition' by synthgeo.masking.household_partition (after Kounadi & "
             "Leitner 2016, doi:10.1016/j.compenvurbsys.2016.01.004)",
}
#: The partition rule, for a reader who rebuilds the areas (public: the method is known).
PARTITION_TEXT = (
    "level by level, every rectangle holding W >= 2k households is cut along its longer side "
    "(y when strictly taller than wide, else x) into q strips of equal household weight, "
    "q = floor(W/k) when W < 9k else floor(sqrt(W/k)); households sharing the cut coordinate "
    "stay in one strip (the one holding the middle of their weight) and each line lies midway "
    "between the neighbouring distinct coordinates of two strips; a rectangle whose strips "
    "would hold fewer than k is halved instead, or left whole; a point on a line belongs to "
    "the upper/right rectangle")
#: Why the same cases must not be masked twice (docs/locations.md, "Masking once").
COMPOSITION_TEXT = (
    "mask these cases once: two releases of the same cases at different k, with another "
    "household layer or by another method intersect (areal: the two areas overlap in fewer "
    "than k households) and protect less than either claims; carry points over with --reuse "
    "at the same method and k")
_FIXED_DATE = "2000-01-01T00:00:00.000Z"  # GeoPackage timestamps, for byte-identical files


def inputs_key(params: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a mask's inputs and parameters (seed excluded).

    Parameters
    ----------
    params : dict
        Input files' sha256, queries, columns, CRS, k and any other parameter of the mask.

    Returns
    -------
    str
        Hex digest. Two masks with the same key and seed were made from the same input files
        (by hash) with the same parameters, so the earlier one can be reused as is.
    """
    text = dumps(params, indent=None, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _write_gpkg(gdf: geopandas.GeoDataFrame, path: Path) -> None:
    import pyogrio

    old = pyogrio.get_gdal_config_option("OGR_CURRENT_DATE")
    pyogrio.set_gdal_config_options({"OGR_CURRENT_DATE": _FIXED_DATE})
    try:
        gdf.to_file(path, layer="masked", driver="GPKG", engine="pyogrio")
    finally:
        pyogrio.set_gdal_config_options({"OGR_CURRENT_DATE": old})


def released_layer(mask: DonutMask, release_ids: str = "pseudonymous"
                   ) -> tuple[geopandas.GeoDataFrame, pd.DataFrame | None]:
    """Return the masked layer as published (ids, row order) and the map to the case ids.

    Parameters
    ----------
    mask : DonutMask
        The mask; its layer is in case order under the case ids.
    release_ids : {"pseudonymous", "original"}, default="pseudonymous"
        ``"pseudonymous"``: the id column holds 1..n in the published row order;
        ``"original"``: it keeps the case ids (only for ids that are public pseudonyms).

    Returns
    -------
    layer : geopandas.GeoDataFrame
        Shape (n_cases, 2): the id column and the masked Point, rows in a random order.
    id_map : pandas.DataFrame or None
        ``release_id`` and the case id column (``confidential_id`` when that is named
        ``release_id``), one row per published point in published order, for the confidential
        side; None under ``"original"``.

    Raises
    ------
    SpecError
        `release_ids` not one of :data:`RELEASE_IDS`.

    Notes
    -----
    A case file's order is rarely neutral (sorted by easting, date or area): break-it trial
    2026-12-07, a Chorley cases file sorted by easting published in file order raised the
    attacker over all households from 0.207 to 0.262 (k = 20, mean over 5 masks). The row order
    is a permutation keyed by the mask's seed and the SHA-256 of its displacements
    (:func:`synthgeo._seed.keyed_permutation`): the same inputs and seed give the same files,
    and no one without the true locations can recompute it, even from a short seed.

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> grid = np.arange(10) * 100.0
    >>> hh = geopandas.GeoSeries(geopandas.points_from_xy(*map(np.ravel, np.meshgrid(grid, grid))),
    ...                          crs="EPSG:27700")
    >>> cases = geopandas.GeoDataFrame({"id": [7, 8, 9]}, crs="EPSG:27700",
    ...     geometry=geopandas.points_from_xy([250.0, 450.0, 650.0], [450.0] * 3))
    >>> cases.attrs["id_column"] = "id"
    >>> from synthgeo.masking import mask_to_k
    >>> layer, id_map = released_layer(mask_to_k(cases, hh, k=4, random_seed=2**40 + 1))
    >>> layer["id"].tolist(), sorted(id_map["id"].tolist())
    ([1, 2, 3], [7, 8, 9])
    """
    if release_ids not in RELEASE_IDS:
        raise SpecError(f"`release_ids` = {release_ids!r}; choose one of {list(RELEASE_IDS)}")
    order = keyed_permutation(len(mask.masked), mask.random_seed, mask.displacement_m,
                              MASK_IDS_SPAWN_KEY)
    layer = mask.masked.iloc[order].reset_index(drop=True)
    layer.attrs = dict(mask.masked.attrs)
    if release_ids == "original":
        return layer, None
    col = mask.id_column
    case_ids = layer[col].to_numpy()
    layer[col] = np.arange(1, len(layer) + 1)
    id_map = pd.DataFrame({"release_id": layer[col].to_numpy(),
                           "confidential_id" if col == "release_id" else col: case_ids})
    return layer, id_map


def write_mask(mask: DonutMask, out: str | os.PathLike, *, record: dict[str, Any] | None = None,
               file_format: str = "parquet", overwrite: bool = False,
               inputs: Iterable[str | os.PathLike] = (),
               release_ids: str = "pseudonymous") -> Path:
    """Write a masked layer (publishable) and its confidential sidecar, atomically.

    Parameters
    ----------
    mask : DonutMask
        The mask (only its publishable layer is written, never r_k or the displacements).
    out : path
        Output folder; must not exist unless `overwrite`.
    record : dict, optional
        Provenance and parameters for the sidecar (inputs and their sha256, queries, the
        ``inputs_key``, the evaluation of the mask); k, seed, n_cases, CRS and the sha256 of
        the released files are added.
    file_format : {"parquet", "gpkg"}, default="parquet"
        GeoParquet (``masked.parquet``) or GeoPackage (``masked.gpkg``, layer ``masked``).
    overwrite : bool, default=False
        Replace an earlier masking output folder.
    inputs : iterable of path
        Input files the folder must not contain.
    release_ids : {"pseudonymous", "original"}, default="pseudonymous"
        What the published id column holds (see :func:`released_layer`); the rows are
        published in a random order either way.

    Returns
    -------
    Path
        The output folder. ``release/`` (publishable) holds the layer, ``masked.csv`` (id,
        ``x_m``, ``y_m`` in the layer's CRS) and ``masking.json`` (method, k, CRS: what a data
        user needs). ``mask.json`` (confidential) holds the seed and everything else, and
        ``release_ids.csv`` (confidential, ``"pseudonymous"`` only) the map from the published
        ids to the case ids.

    Raises
    ------
    SpecError
        Bad `file_format`, `release_ids` or output folder (see
        :func:`synthgeo.io.atomic.write_folder`).

    Notes
    -----
    The seed is the key of the mask: with it and the method, anyone can recompute each
    displacement's direction and relative distance and undo the mask. It is therefore kept in
    the confidential ``mask.json`` only, never in ``release/``. Files are byte-identical for the
    same inputs and seed (GeoPackage timestamps are fixed).
    """
    if file_format not in _LAYER:
        raise SpecError(f"`file_format` = {file_format!r}; choose one of {sorted(_LAYER)}")
    layer, id_map = released_layer(mask, release_ids)
    crs = pyproj.CRS.from_user_input(layer.crs)

    def write(tmp: Path) -> None:
        rel = tmp / "release"
        rel.mkdir()
        name = _LAYER[file_format]
        if file_format == "parquet":
            layer.to_parquet(rel / name, index=False)
        else:
            _write_gpkg(layer, rel / name)
        table = pd.DataFrame({mask.id_column: layer[mask.id_column].to_numpy(),
                              "x_m": layer.geometry.x.to_numpy(),
                              "y_m": layer.geometry.y.to_numpy()})
        table.to_csv(rel / "masked.csv", index=False, float_format="%.3f")
        if id_map is not None:  # confidential: beside mask.json, never in release/
            id_map.to_csv(tmp / MASK_ID_MAP, index=False)
        public = {
            "synthgeo_masked_points": 1,
            "method": METHOD_TEXT[mask.method],
            "k": mask.k, "n_points": len(layer), "id_column": mask.id_column,
            "ids": _IDS_TEXT[release_ids],
            **({"verified": "each point redrawn until at least k households (counted within "
                            "cos(pi/64) of the distance) are as close to it as the true "
                            "location (verified k >= k); an annulus widened after repeated "
                            "failures"} if mask.verified and mask.method == "donut" else {}),
            "co_located_records": "records at one location share one published point",
            **({"partition": {"root_extent_m": (mask.verification or {}).get("extent"),
                              "rule": PARTITION_TEXT,
                              "k_counts": "households (weights summed) inside the area and the "
                                          "study region; households sharing one coordinate "
                                          "count separately"}}
               if mask.method == "areal" else {}),
            "composition": COMPOSITION_TEXT,
            "crs": crs.name, "crs_wkt": crs.to_wkt(), "units": "metres",
            "files": [name, "masked.csv"],
        }
        (rel / "masking.json").write_text(dumps(public) + "\n", encoding="utf-8")
        side = {
            "synthgeo_mask": 1,
            "confidential": "holds the seed, the key of the mask: never publish this file",
            **(record or {}),
            "k": mask.k, "random_seed": mask.random_seed, "n_cases": len(layer),
            "n_redraws": mask.n_redraws, "n_reused": mask.n_reused, "method": mask.method,
            "largest_site": mask.largest_site,
            "verification": mask.verification, "composition": COMPOSITION_TEXT,
            "id_column": mask.id_column, "crs": crs.name, "crs_wkt": crs.to_wkt(),
            "release_ids": release_ids,
            **({"release_ids_warning": ORIGINAL_IDS_WARNING} if id_map is None else {}),
            "layer": f"release/{name}",
            "files": {**{f"release/{f}": file_sha256(rel / f)
                         for f in (name, "masked.csv", "masking.json")},
                      **({MASK_ID_MAP: file_sha256(tmp / MASK_ID_MAP)}
                         if id_map is not None else {})},
        }
        (tmp / MASK_SIDECAR).write_text(dumps(side) + "\n", encoding="utf-8")

    return write_folder(out, write, marker=MASK_SIDECAR, overwrite=overwrite, inputs=inputs)


def read_mask(folder: str | os.PathLike) -> tuple[geopandas.GeoDataFrame, dict[str, Any]]:
    """Read a masked layer written by :func:`write_mask`, checking it is unchanged.

    Parameters
    ----------
    folder : path
        Folder holding ``mask.json`` and the files it lists.

    Returns
    -------
    layer : geopandas.GeoDataFrame
        The masked layer in its published row order, its id column holding the case ids
        (release pseudonyms mapped back through ``release_ids.csv``; ``attrs["id_column"]``
        and ``attrs["release_ids"]`` set). Confidential when the ids were pseudonymous.
    sidecar : dict
        The parameters it was written with (``k``, ``random_seed``, ``inputs_key``, ...).

    Raises
    ------
    InputError
        No sidecar, a listed file missing or changed since it was written (sha256 differs),
        or an id map that does not match the published ids.
    """
    folder = Path(folder)
    side_path = folder / MASK_SIDECAR
    if not side_path.is_file():
        raise InputError(f"{str(folder)!r} holds no {MASK_SIDECAR}: not a synthgeo mask folder")
    try:
        side = json.loads(side_path.read_text(encoding="utf-8"))
        files, layer_name, id_column = side["files"], side["layer"], side["id_column"]
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"could not read {side_path}: {exc!r}") from exc
    for name, digest in files.items():
        path = folder / name
        if not path.is_file():
            raise InputError(f"{name} listed in {side_path} is missing")
        if file_sha256(path) != digest:
            raise InputError(f"{path} changed since the mask was written (sha256 differs from "
                             f"{MASK_SIDECAR}); restore it from the release, do not re-mask")
    path = folder / layer_name
    layer = (geopandas.read_parquet(path) if path.suffix == ".parquet"
             else geopandas.read_file(path, layer="masked"))
    kind = side.get("release_ids", "original")  # masks written before 2026-12-07: case ids
    if kind == "pseudonymous":
        layer[id_column] = _case_ids(folder, files, layer[id_column], id_column)
    layer.attrs.update(id_column=id_column, release_ids=kind)
    return layer, side


def _case_ids(folder: Path, files: dict[str, str], published: pd.Series,
              id_column: str) -> np.ndarray:
    """Map a mask's published pseudonyms back to the case ids (its ``release_ids.csv``)."""
    if MASK_ID_MAP not in files:
        raise InputError(f"{folder / MASK_SIDECAR} says the ids are release pseudonyms but lists "
                         f"no {MASK_ID_MAP}: restore the mask folder as it was written")
    column = "confidential_id" if id_column == "release_id" else id_column
    id_map = keep_id_text(pd.read_csv(folder / MASK_ID_MAP, dtype={column: str}), column)
    lookup = dict(zip(id_map["release_id"], id_map[column]))
    if len(lookup) != len(id_map) or set(lookup) != set(published) \
            or id_map[column].duplicated().any():
        raise InputError(f"{folder / MASK_ID_MAP} does not match the published ids: restore the "
                         "mask folder as it was written")
    return published.map(lookup).to_numpy()


def reuse_previous_mask(mask: DonutMask, previous: geopandas.GeoDataFrame,
                        cases: geopandas.GeoDataFrame) -> DonutMask:
    """Keep the earlier masked location of every case already released; mask only new ones.

    Parameters
    ----------
    mask : DonutMask
        A fresh mask of all current cases.
    previous : geopandas.GeoDataFrame
        An earlier masked layer (from :func:`read_mask`) with the same id column and CRS.
    cases : geopandas.GeoDataFrame
        The true case layer `mask` was made from (for the displacements).

    Returns
    -------
    DonutMask
        `mask` with the points of ids found in `previous` replaced by their earlier masked
        points; ``n_reused`` counts them and ``displacement_m`` is recomputed.

    Raises
    ------
    InputError
        Different CRS or missing id column in `previous`, or repeated ids in it.

    Notes
    -----
    Publishing two independent masks of the same case lets an attacker average them (the mean
    of two donut displacements is on average closer to the truth); reusing the earlier point
    keeps the disclosure risk at that of one mask. Ids must denote the same cases at the same
    true locations in both releases (not checked: the earlier file holds no true locations).
    """
    col = mask.id_column
    if col not in previous.columns:
        raise InputError(f"the earlier masked layer has no id column `{col}`; reuse needs the "
                         "same id column")
    if previous.crs is None or not pyproj.CRS.from_user_input(previous.crs).equals(
            pyproj.CRS.from_user_input(mask.masked.crs), ignore_axis_order=True):
        raise InputError(f"the earlier masked layer is in {getattr(previous.crs, 'name', None)!r}"
                         f", this mask in {mask.masked.crs.name!r}; reuse needs one CRS")
    if previous[col].duplicated().any():
        raise InputError(f"the earlier masked layer repeats ids in `{col}`")
    old = previous.set_index(col).geometry
    ids = mask.masked[col]
    found = ids.isin(old.index).to_numpy()
    layer = mask.masked.copy()
    if found.any():
        layer.loc[found, layer.geometry.name] = old.loc[ids[found]].to_numpy()
    layer.attrs = dict(mask.masked.attrs)
    true = np.column_stack([cases.geometry.x.to_numpy(), cases.geometry.y.to_numpy()])
    disp = np.hypot(layer.geometry.x.to_numpy() - true[:, 0],
                    layer.geometry.y.to_numpy() - true[:, 1])
    return DonutMask(masked=layer, r_k_m=mask.r_k_m, displacement_m=disp, k=mask.k,
                     random_seed=mask.random_seed, n_redraws=mask.n_redraws,
                     id_column=col, n_reused=int(found.sum()),
                     verified_k=None if found.any() else mask.verified_k,
                     verification=mask.verification, method=mask.method,
                     largest_site=mask.largest_site)


def write_choose_k(result: ChooseKResult, out: str | os.PathLike, *,
                   record: dict[str, Any] | None = None, overwrite: bool = False,
                   inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Write a sweep's table, compliance record and figure into a new folder, atomically.

    Parameters
    ----------
    result : ChooseKResult
        Output of :func:`~synthgeo.masking.choose_k`.
    out : path
        Output folder; must not exist unless `overwrite`.
    record : dict, optional
        Provenance to put first in the record (inputs, sha256, versions, command).
    overwrite : bool, default=False
        Replace an earlier choose-k output folder.
    inputs : iterable of path
        Input files the folder must not contain.

    Returns
    -------
    Path
        The folder, holding ``sweep.csv`` (one row per k), ``choose_k.json`` (the compliance
        record: provenance, then :meth:`ChooseKResult.to_record`) and ``choose_k.png``.

    Raises
    ------
    SpecError
        Bad output folder (see :func:`synthgeo.io.atomic.write_folder`).
    """
    from synthgeo.masking.plot import plot_choose_k

    def write(tmp: Path) -> None:
        result.table.to_csv(tmp / "sweep.csv", index=False, float_format="%.6g")
        full = {"synthgeo_choose_k_record": 1, **(record or {}), **result.to_record()}
        (tmp / CHOOSE_K_RECORD).write_text(dumps(full) + "\n", encoding="utf-8")
        plot_choose_k(result).savefig(tmp / "choose_k.png", dpi=120)

    return write_folder(out, write, marker=CHOOSE_K_RECORD, overwrite=overwrite, inputs=inputs)
