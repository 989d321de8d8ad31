"""Spec section ``[data]`` and the ``[[data.responses]]`` tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from synthgeo._errors import SpecError
from synthgeo.config._common import (
    _EXCLUSIVE_TRANSFORM,
    RESPONSE_FAMILIES,
    _err,
    _is_int,
    _is_number,
    _known_encoding,
    _sub_table,
)


@dataclass(frozen=True, kw_only=True)
class ResponseConfig:
    """One confidential response of ``[[data.responses]]`` (synthesised in the order given).

    ``name``: the column; ``family`` {"gaussian", "bernoulli", "poisson"}; ``transform``
    {"log"} (gaussian only: the column is on its original scale, modelled as log y and
    released as exp(y†)); ``exposure``: poisson exposure column (offset log E); ``positive``
    (bernoulli only): the event level of a yes/no text column, e.g. "YES" (without it the column
    must hold 0/1). Response j is fitted with the confidential responses before it as
    covariates; implicate l of response j is drawn given implicate l of the earlier synthetic
    responses (sequential synthesis, docs/model.md "Several responses").
    """

    name: str
    family: Literal["gaussian", "bernoulli", "poisson"] = "gaussian"
    transform: Literal["log"] | None = None
    exposure: str | None = None
    positive: str | None = None

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        sec = "data.responses"
        if not (isinstance(self.name, str) and self.name):
            raise _err(sec, "name", self.name, "a non-empty column name")
        if self.family not in RESPONSE_FAMILIES:
            raise _err(sec, "family", self.family, 'one of "gaussian", "bernoulli", "poisson"')
        if self.transform is not None and self.transform != "log":
            raise _err(sec, "transform", self.transform, '"log" (or left out)')
        if self.transform is not None and self.family != "gaussian":
            raise _err(sec, "transform", self.transform,
                       f'left out for family "{self.family}" (gaussian only)')
        for key in ("exposure", "positive"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, str) and v):
                raise _err(sec, key, v, "a non-empty string (or left out)")
        if self.exposure is not None and self.family != "poisson":
            raise _err(sec, "exposure", self.exposure,
                       f'left out for family "{self.family}" (poisson only)')
        if self.positive is not None and self.family != "bernoulli":
            raise _err(sec, "positive", self.positive,
                       f'left out for family "{self.family}" (bernoulli only)')




@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the confidential points are and which columns play which role.

    ``path`` (str): points file, relative to the spec or ``synthgeo:NAME`` (required in a spec
    file; None for records handed over in memory, see :func:`synthgeo.synthesize`); ``x``/``y``:
    CSV coordinate columns; ``crs``: CRS of those coordinates when the file has none; ``id``:
    record id column; ``query``: pandas query selecting records; ``response``: response column on
    the model scale (e.g. log-dollars); ``back_transform`` {"exp", "identity"}: g, from the model
    scale to the scale a person knows (dollars); ``transform`` {"log"}: the response column is on
    its original scale (dollars), modelled as log(y) and released as exp(y†) under the same name
    (exclusive with ``back_transform``, which is then exp;
    :class:`synthgeo.model.transform.ResponseScale`); ``covariates``: released unchanged;
    ``subject``: subject id column (records of one subject are never each other's neighbours);
    ``target_crs``: "utm" or a projected CRS in metres; ``drop_duplicates``: drop exact
    duplicate rows (they are always reported); ``coord_unit_m``: metres per unit of the x/y
    columns (default: the CRS's unit; 1000 for kilometres; refused with a geographic CRS);
    ``sep``, ``decimal``, ``encoding``: how the CSV is written (default ",", ".", "utf-8");
    ``thousands``: the CSV's thousands separator, one character (``"."`` with decimal commas,
    ``1.234,5``; default none: under ``decimal = ","`` a column of dot-grouped integers such as
    ``1.234`` is refused rather than read as 1.234);
    ``responses``: :class:`ResponseConfig` tables, ``[[data.responses]]``, synthesised in
    sequence (``response`` is the shorthand for one gaussian response; with ``responses`` it
    is the first one's name); ``missing`` {"refuse", "drop"}: a record with a missing response
    or covariate is refused, or dropped (not released; counts reported, by
    ``[anonymity] unit`` when set); ``max_dropped_share`` (default 0.05) with
    ``on_drop_failure`` {"stop", "warn"}: when ``missing = "drop"`` removes more than this
    share of the records, the run stops (default: the rest may not represent the file) or
    goes on with the coded warning ``many_records_dropped`` in release.json and the report.
    A covariate column of text becomes treatment-coded design columns (first level in sorted
    order is the reference; recorded in release.json) and is released unchanged;
    ``release_ids`` {"pseudonymous", "original"}: the released id column holds 1..n in a random
    record order (map in ``confidential/release_ids.csv``; default), or the confidential ids in
    file order (:mod:`synthgeo.release.records`);
    ``accept_small_extent``: go on (with a warning in the release record) when 10–49 distinct
    locations span under 100 m (50 or more under 1 km) or lie a median under 1 m apart, otherwise
    refused as a likely unit error (docs/locations.md, "Units and plausibility");
    ``study_area``: where the points must lie, a lon/lat box ``[west, south, east, north]`` in
    degrees or a polygon file (GeoJSON, GeoPackage, shapefile with its CRS) relative to the
    spec; any point outside it refuses the file (default: none); ``accept_offshore``: go on
    (with a warning) when more than half of the points lie over the sea, otherwise refused as a
    likely unit factor or axis error (docs/locations.md, "Where the points are");
    ``accept_repeated_records``: go on (with the coded warning ``repeated_records_accepted`` in
    release.json and the report) when more than one record, and more than 1 % of them, repeat
    another in location and every column but the id, otherwise refused as a file appended to
    itself or joined twice (docs/release.md, "Inputs"; ``drop_duplicates`` drops them instead).
    """

    response: str | None = None
    path: str | None = None
    covariates: list[str] = field(default_factory=list)
    x: str | None = None
    y: str | None = None
    crs: str | int | None = None
    id: str | None = None
    query: str | None = None
    back_transform: str = "exp"
    transform: Literal["log"] | None = None
    subject: str | None = None
    target_crs: str | int = "utm"
    drop_duplicates: bool = False
    coord_unit_m: float | None = None
    sep: str = ","
    decimal: str = "."
    encoding: str = "utf-8"
    thousands: str | None = None
    accept_small_extent: bool = False
    responses: list[ResponseConfig] = field(default_factory=list)
    missing: Literal["refuse", "drop"] = "refuse"
    max_dropped_share: float = 0.05
    on_drop_failure: Literal["stop", "warn"] = "stop"
    release_ids: Literal["pseudonymous", "original"] = "pseudonymous"
    study_area: list[float] | str | None = None
    accept_offshore: bool = False
    accept_repeated_records: bool = False

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if not isinstance(self.responses, list):
            raise _err("data", "responses", self.responses, "`[[data.responses]]` tables")
        tables = [_sub_table(r, ResponseConfig, "data", "responses", "`[[data.responses]]` tables")
                  for r in self.responses]
        object.__setattr__(self, "responses", tables)
        names = [r.name for r in self.responses]
        if len(set(names)) != len(names):
            raise _err("data.responses", "name", names, "distinct column names")
        if self.responses:
            if self.response is None:
                object.__setattr__(self, "response", names[0])
            elif self.response != names[0]:
                raise _err("data", "response", self.response,
                           f"left out with `[[data.responses]]` (or the first one, {names[0]!r})")
            if self.transform is not None:
                raise _err("data", "transform", self.transform,
                           "left out with `[[data.responses]]` (give it per response)")
        elif self.response is None:
            raise SpecError("spec `[data]` is missing required key(s) ['response'] (one gaussian "
                            "response; or give `[[data.responses]]` tables)")
        if self.missing not in ("refuse", "drop"):
            raise _err("data", "missing", self.missing, 'one of "refuse", "drop"')
        if not (_is_number(self.max_dropped_share) and 0 <= self.max_dropped_share <= 1):
            raise _err("data", "max_dropped_share", self.max_dropped_share, "a share in [0, 1]")
        if self.on_drop_failure not in ("stop", "warn"):
            raise _err("data", "on_drop_failure", self.on_drop_failure, '"stop" or "warn"')
        if self.release_ids not in ("pseudonymous", "original"):
            raise _err("data", "release_ids", self.release_ids,
                       'one of "pseudonymous", "original"')
        if not (isinstance(self.response, str) and self.response):
            raise _err("data", "response", self.response, "a non-empty string")
        if self.path is not None and not (isinstance(self.path, str) and self.path):
            raise _err("data", "path", self.path, "a non-empty string")
        for key in ("x", "y", "id", "query", "subject"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, str) and v):
                raise _err("data", key, v, "a non-empty string (or left out)")
        for key in ("crs", "target_crs"):
            v = getattr(self, key)
            if v is not None and not ((isinstance(v, str) and v) or _is_int(v)):
                raise _err("data", key, v, 'a CRS such as "EPSG:4326" (a string or EPSG code)')
        if (self.x is None) != (self.y is None):
            raise _err("data", "x" if self.x is None else "y", None,
                       "given together with the other coordinate column")
        if isinstance(self.study_area, tuple):
            object.__setattr__(self, "study_area", list(self.study_area))
        if self.study_area is not None and not (
                (isinstance(self.study_area, str) and self.study_area)
                or (isinstance(self.study_area, list) and len(self.study_area) == 4
                    and all(_is_number(v) for v in self.study_area))):
            raise _err("data", "study_area", self.study_area,
                       "[west, south, east, north] in degrees or a polygon file path")
        for key in ("drop_duplicates", "accept_small_extent", "accept_offshore",
                    "accept_repeated_records"):
            if not isinstance(getattr(self, key), bool):
                raise _err("data", key, getattr(self, key), "true or false")
        if self.coord_unit_m is not None and not (_is_number(self.coord_unit_m)
                                                  and self.coord_unit_m > 0):
            raise _err("data", "coord_unit_m", self.coord_unit_m,
                       "a positive number of metres per coordinate unit (1000 for km)")
        for key in ("sep", "decimal"):
            v = getattr(self, key)
            if not (isinstance(v, str) and len(v) == 1):
                raise _err("data", key, v, 'one character, e.g. ";" or "\\t"')
        if self.sep == self.decimal:
            raise _err("data", "decimal", self.decimal, f"different from `sep` {self.sep!r}")
        if self.thousands is not None and not (
                isinstance(self.thousands, str) and len(self.thousands) == 1
                and self.thousands not in (self.sep, self.decimal)):
            raise _err("data", "thousands", self.thousands,
                       f'one character other than `sep` {self.sep!r} and `decimal` '
                       f'{self.decimal!r}, e.g. "." with decimal = ","')
        if not (isinstance(self.encoding, str) and _known_encoding(self.encoding)):
            raise _err("data", "encoding", self.encoding,
                       'a text encoding Python knows, e.g. "utf-8", "latin-1", "cp1252"')
        if self.back_transform not in ("exp", "identity"):
            raise _err("data", "back_transform", self.back_transform, 'one of "exp", "identity"')
        if self.transform is not None and self.transform != "log":
            raise _err("data", "transform", self.transform, '"log" (or left out)')
        if self.transform == "log" and self.back_transform != "exp":
            raise SpecError(_EXCLUSIVE_TRANSFORM)
        if not isinstance(self.covariates, list) or not all(
            isinstance(c, str) for c in self.covariates
        ):
            raise _err("data", "covariates", self.covariates, "a list of column names")
        if len(set(self.covariates)) != len(self.covariates):
            raise _err("data", "covariates", self.covariates, "a list without repeated names")
        for name in self.response_names:
            if name in self.covariates:
                raise _err("data", "covariates", self.covariates,
                           f"columns other than the response {name!r}")
        if self.id is not None and self.id in self.covariates:  # break-it: fitted on ids
            raise _err("data", "covariates", self.covariates,
                       f"columns other than the record id {self.id!r} (an id is a label, and "
                       "its order can follow the response)")
        for r in self.responses:
            if r.exposure is not None and r.exposure in self.response_names:
                raise _err("data.responses", "exposure", r.exposure,
                           "a column that is not a response")

    @property
    def response_names(self) -> list[str]:
        """Names of the confidential responses, in synthesis order."""
        return [r.name for r in self.responses] or [self.response]

    @property
    def response_configs(self) -> list[ResponseConfig]:
        """The responses as :class:`ResponseConfig` (``response`` alone: one gaussian)."""
        return list(self.responses) or [ResponseConfig(name=self.response,
                                                       transform=self.transform)]

    @property
    def response_transform(self) -> Literal["log"] | None:
        """Return the first response's ``transform`` (``[data]``'s or its entry's).

        One home: a single gaussian ``[[data.responses]]`` entry is ``[data] response`` and
        ``transform``.
        """
        return self.response_configs[0].transform

    @property
    def sequential(self) -> bool:
        """Return whether the run takes the several-responses / GLMM route.

        True for ``[[data.responses]]`` with more than one response or a non-gaussian one.
        """
        return len(self.responses) > 1 or any(r.family != "gaussian" for r in self.responses)


