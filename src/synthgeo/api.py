"""The front door's jobs: :func:`synthesize` (data in memory), :func:`run` (a spec), compare.

The spec's sections are these functions' types (:class:`~synthgeo.config.ModelConfig`,
:class:`~synthgeo.config.SamplingConfig`, ...), so anything a spec can say can be said here;
:func:`synthesize` on ``read_points(<[data] keys>)`` and :func:`run` on the spec write the same
``release/`` bytes. Every command of the ``synthgeo`` command line is a layer over these.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas
import numpy as np
import pandas as pd
import xarray as xr

from synthgeo.config import (
    AnonymityConfig,
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    RiskConfig,
    SamplingConfig,
    SynthesisConfig,
    UtilityConfig,
)
from synthgeo.io.read import read_options
from synthgeo.pipeline import MODELS, Fitter, ReleaseResult, ReleaseRisk, as_spec, run_release

if TYPE_CHECKING:
    import arviz

__all__ = ["Release", "synthesize", "run", "draw", "compare", "show_versions", "spec_for_points"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Release:
    """A finished release job, from :func:`synthgeo.synthesize` or :func:`synthgeo.run`.

    Nothing is written until :meth:`write`.

    Attributes
    ----------
    result : ReleaseResult or SequentialResult
        The pipeline's full record (prepared data, fits, at-risk rule, location diagnostics).
    implicates : xarray.Dataset
        Variables ``unrestricted`` and ``restricted``, dims (``implicate``, ``record``):
        synthetic responses on the model scale; coord ``at_risk`` (record).
    posterior : dict of str to arviz.InferenceData
        ``"unrestricted"`` and ``"restricted"`` fits (``posterior``: ``beta``, ``sigma2``,
        ``nugget``, ``range`` in metres, ``phi`` per metre, ``w``).
    risk : ReleaseRisk
        ``risk.to_dataframe()`` per record, ``risk.summary``, ``risk["restricted"]``.
    reiter : pandas.DataFrame
        Reiter (2003) combining-rules table (``q_bar``, ``b_m``, ``u_bar``, ``T_p``), both models
        beside the confidential fit, with CI overlap.

    Examples
    --------
    See :func:`synthgeo.synthesize`.
    """

    def __repr__(self) -> str:
        """Show what the release is without its confidential contents.

        The verdicts are :attr:`verdicts`, the key figures :meth:`summary`; everything
        else by :meth:`write`.
        """
        return repr(self.result).replace(type(self.result).__name__, "Release", 1)

    result: ReleaseResult
    #: The register and release key :meth:`write` signs and registers with (see
    #: :func:`run`); None: unsigned unless SYNTHGEO_RELEASE_KEY is set, not registered.
    ledger: Any = dataclasses.field(default=None, repr=False)

    def _single(self, what: str) -> None:
        """Refuse a single-response view of a sequential release (``[[data.responses]]``)."""
        if self.result.spec.data.sequential:
            raise AttributeError(
                f"`Release.{what}` describes one gaussian response; this release has "
                "`[[data.responses]]`: use `release.result.responses` (per response: fits, "
                "synthetic, risk_summary, utility) and `release.result.joint_risk`")

    @property
    def spec(self) -> ReleaseSpec:
        """The spec as run (every section, defaults filled in)."""
        return self.result.spec

    @property
    def M_m(self) -> float:  # noqa: N802
        """Distance M of the at-risk rule, metres."""
        return self.result.M_m

    @property
    def at_risk(self) -> np.ndarray:
        """Bool per record: no other record within M (docs/model.md)."""
        self._single("at_risk")
        return np.asarray(self.result.at_risk.at_risk, bool)

    @property
    def implicates(self) -> xr.Dataset:
        """Both models' implicates, dims (implicate, record), model scale."""
        self._single("implicates")
        r = self.result
        ds = xr.Dataset({name: r.implicates[name]["y_synthetic"].drop_vars(
            ["source_chain", "source_draw"], errors="ignore") for name in MODELS})
        ds = ds.assign_coords(at_risk=("record", self.at_risk))
        ds.attrs.update(response=r.spec.data.response, back_transform=r.spec.data.back_transform,
                        released_model="restricted", M_m=float(r.M_m))
        return ds

    @property
    def posterior(self) -> dict[str, arviz.InferenceData]:
        """Posterior of each model as ArviZ InferenceData."""
        self._single("posterior")
        return {name: fit.idata for name, fit in self.result.fits.items()}

    @property
    def risk(self) -> ReleaseRisk:
        """Disclosure risk of both models (see :class:`ReleaseRisk`)."""
        self._single("risk")
        return ReleaseRisk(result=self.result)

    @property
    def reiter(self) -> pd.DataFrame:
        """Reiter (2003) table of the analyst's model for both models and the truth."""
        self._single("reiter")
        return self.result.utility

    @property
    def general_utility(self):
        """pMSE, its ratio and S_pMSE against the paired null, SPECKS, both models.

        A :class:`~synthgeo.pipeline.general_utility.GeneralUtility` (``.pooled()``,
        ``.by_implicate()``, ``.by_variable``, ``.by_region()``; docs/risk-and-utility.md,
        "General utility: pMSE"), or None when the stage did not run. For several responses,
        every response jointly.
        """
        return getattr(self.result, "general_utility", None)

    @property
    def seconds(self) -> dict[str, float]:
        """Wall time per stage, seconds."""
        return dict(self.result.seconds)

    @property
    def verdicts(self) -> dict[str, str]:
        """The board's answers: ``{"location": ..., "risk": ...}``.

        Each is "PASS", "FAIL" or "NOT ASSESSED" (no target set: never PASS); the same
        statuses release.json's ``verdicts`` and the report's first screen give.
        """
        from synthgeo.pipeline.result import verdicts

        return verdicts(self.result)

    def summary(self) -> pd.DataFrame:
        """Key figures a board reads first, as a table (no record-level value).

        Returns
        -------
        pandas.DataFrame
            Columns ``figure``, ``model`` ("" when the figure is not per model), ``value``:
            records, at-risk records, M (metres), implicates, both verdicts; per scored
            measure the mean and largest attributable risk (share attack, all records,
            against the verdict's baseline) of both models; and the smallest Reiter CI overlap
            of each model. A release of several responses gives the counts and verdicts only.
        """
        r = self.result
        rows: list[tuple[str, str, object]] = [
            ("records", "", int(r.data.n_records)),
            ("implicates (L)", "", int(r.spec.synthesis.n_implicates)),
            *[(f"{k} verdict", "", v) for k, v in self.verdicts.items()],
        ]
        if not r.spec.data.sequential:
            rows += [("at-risk records", "", int(r.at_risk.n_at_risk)),
                     ("M (metres)", "", round(float(r.M_m), 1))]
            scores = getattr(r, "risk_scores", None)
            if scores is not None:
                t = scores.table.query("group == 'all' and attack == 'share'")
                for _, row in t.iterrows():
                    rows += [(f"attributable risk, mean [{row['measure']}]", row["model"],
                              float(row["attributable"])),
                             (f"attributable risk, largest [{row['measure']}]", row["model"],
                              float(row["largest_attributable"]))]
            u = r.utility
            if u is not None and "ci_overlap" in u:
                for model in MODELS:
                    ov = u.loc[u["model"] == model, "ci_overlap"]
                    if len(ov):
                        rows.append(("smallest Reiter CI overlap", model, float(ov.min())))
        return pd.DataFrame(rows, columns=["figure", "model", "value"])

    def _repr_html_(self) -> str:
        """Notebook display: the verdicts and :meth:`summary`, never a confidential value."""
        import html

        head = html.escape(repr(self))
        return f"<p><code>{head}</code></p>" + self.summary().to_html(index=False)

    def write(self, out: str | os.PathLike, *, overwrite: bool = False,
              progressbar: bool = False) -> Path:
        """Write exactly what ``synthgeo run`` writes: release/, confidential/, records, report.

        Parameters
        ----------
        out : path
            New output folder (atomic: all or nothing).
        overwrite : bool, default=False
            Replace an earlier synthgeo output folder.
        progressbar : bool, default=False
            Progress bar while the report is drawn.

        Returns
        -------
        Path
            The folder.

        Raises
        ------
        synthgeo.SpecError
            If `out` exists without `overwrite`, is not an earlier output, or holds an input.
        synthgeo.InputError
            If the register refuses the release (:func:`run`'s ``register``).
        """
        from synthgeo.register import make_ledger
        from synthgeo.release.writer import write_result

        ledger = self.ledger if self.ledger is not None else make_ledger(environ={
            k: v for k, v in os.environ.items() if k == "SYNTHGEO_RELEASE_KEY"})
        return write_result(self.result, out, overwrite=overwrite, progressbar=progressbar,
                            ledger=ledger)


Progress = Callable[[str], None] | None


def _section(name: str, cls: type, given: Any, **shortcuts: Any) -> Any:
    """Return `given` (or the defaults) with the non-None shortcut keys replacing its own."""
    if given is None:
        given = cls()
    elif not isinstance(given, cls):
        raise TypeError(f"`{name}` must be a synthgeo.{cls.__name__}, got "
                        f"{type(given).__name__}")
    changes = {k: v for k, v in shortcuts.items() if v is not None}
    return dataclasses.replace(given, **changes) if changes else given


def _data_keys(data: DataConfig | dict | None, fields: set[str]) -> dict[str, Any]:
    """Return the ``[data]`` keys given as a section (a DataConfig: its non-default fields)."""
    if data is None:
        return {}
    if isinstance(data, DataConfig):
        default = DataConfig()
        return {f: getattr(data, f) for f in fields if getattr(data, f) != getattr(default, f)}
    if not isinstance(data, dict):
        raise TypeError(f"`data` must be a synthgeo.DataConfig or a dict of [data] keys, got "
                        f"{type(data).__name__}")
    unknown = sorted(set(data) - fields)
    if unknown:
        raise TypeError(f"`data` has unknown [data] key(s) {unknown}; the keys are "
                        f"{sorted(fields)}")
    return dict(data)


def spec_for_points(
    points: geopandas.GeoDataFrame, *, response: str | None = None,
    covariates: Sequence[str] = (), responses: Sequence[Any] = (), missing: str | None = None,
    formula: str | None = None, implicates: int | None = None, seed: int | None = None,
    id: str | None = None, x: str | None = None, y: str | None = None,  # noqa: A002
    subject: str | None = None, back_transform: str | None = None,
    transform: str | None = None,
    accept_small_extent: bool | None = None, accept_offshore: bool | None = None,
    study_area: Sequence[float] | str | None = None, data: DataConfig | dict | None = None,
    model: ModelConfig | None = None, sampling: SamplingConfig | None = None,
    synthesis: SynthesisConfig | None = None, risk: RiskConfig | None = None,
    utility: UtilityConfig | None = None, anonymity: AnonymityConfig | None = None,
) -> ReleaseSpec:
    """Return the :class:`ReleaseSpec` :func:`synthesize` runs on `points`.

    ``[data]`` takes the reading keys (path, x, y, crs, id, query, target_crs,
    drop_duplicates) that :func:`synthgeo.read_points` recorded, as long as the frame still
    holds the data it returned; ``path``, ``query`` and ``drop_duplicates`` are dropped once
    it has changed (the release record must not name a file the data no longer match).

    Parameters
    ----------
    points, response, covariates, responses, missing, formula, implicates, seed, id, x, y,
    subject, back_transform, transform, data
        As :func:`synthesize`.
    accept_small_extent, accept_offshore, study_area
        As :func:`synthesize`.
    model, sampling, synthesis, risk, utility, anonymity
        As :func:`synthesize`.

    Returns
    -------
    ReleaseSpec
        With ``source = None`` (no spec file).

    Raises
    ------
    TypeError, synthgeo.SpecError
        As :func:`synthesize`.

    Examples
    --------
    >>> import geopandas
    >>> pts = geopandas.GeoDataFrame({"y": [1.0]}, geometry=geopandas.points_from_xy([0], [0]),
    ...                              crs="EPSG:32610")
    >>> spec = spec_for_points(pts, response="y", seed=7)
    >>> spec.data.path, spec.sampling.seed, spec.formula
    (None, 7, 'y ~ 1')
    """
    if not isinstance(points, geopandas.GeoDataFrame):
        from synthgeo.io.read import check_points_frame

        check_points_frame(points)  # raises the TypeError that says how to build one
    if isinstance(covariates, str):  # list("sqft") would be its letters
        raise TypeError(f"`covariates` must be a list of column names, got the string "
                        f"{covariates!r}; write [{covariates!r}]")
    recorded = points.attrs.get("read_options") or {}
    unchanged = read_options(points) is not None
    fields = {f.name for f in dataclasses.fields(DataConfig)}
    keys = {k: v for k, v in recorded.items() if k in fields
            and (unchanged or k not in ("path", "query", "drop_duplicates"))}
    keys.update(_data_keys(data, fields))
    given = {"id": id, "x": x, "y": y, "accept_small_extent": accept_small_extent,
             "accept_offshore": accept_offshore, "response": response, "subject": subject,
             "back_transform": back_transform, "transform": transform, "missing": missing,
             "covariates": list(covariates) or None, "responses": list(responses) or None,
             "study_area": None if study_area is None else
             (study_area if isinstance(study_area, str) else list(study_area))}
    keys.update({k: v for k, v in given.items() if v is not None})
    data = DataConfig(**keys)
    return ReleaseSpec(
        data=data,
        model=_section("model", ModelConfig, model),
        sampling=_section("sampling", SamplingConfig, sampling, seed=seed),
        synthesis=_section("synthesis", SynthesisConfig, synthesis, n_implicates=implicates),
        risk=_section("risk", RiskConfig, risk),
        utility=_section("utility", UtilityConfig, utility, formula=formula),
        anonymity=_section("anonymity", AnonymityConfig, anonymity),
    )


def synthesize(
    points: geopandas.GeoDataFrame, *, response: str | None = None,
    covariates: Sequence[str] = (), responses: Sequence[Any] = (), missing: str | None = None,
    formula: str | None = None, implicates: int | None = None, seed: int | None = None,
    id: str | None = None, x: str | None = None, y: str | None = None,  # noqa: A002
    subject: str | None = None, back_transform: str | None = None,
    transform: str | None = None,
    accept_small_extent: bool | None = None, accept_offshore: bool | None = None,
    study_area: Sequence[float] | str | None = None, data: DataConfig | dict | None = None,
    model: ModelConfig | None = None, sampling: SamplingConfig | None = None,
    synthesis: SynthesisConfig | None = None, risk: RiskConfig | None = None,
    utility: UtilityConfig | None = None, anonymity: AnonymityConfig | None = None,
    fitter: Fitter | None = None, progress: Progress = None, progressbar: bool = False,
) -> Release:
    """Fit both models to records in memory, synthesise, and score risk and utility.

    The whole job of ``synthgeo run`` (docs/model.md, docs/risk-and-utility.md) on a
    GeoDataFrame; nothing is written until :meth:`Release.write`.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        One Point per record with a CRS (from :func:`synthgeo.read_points`, or built in memory;
        a frame not in metres is projected to ``[data] target_crs``). Never modified.
    response : str, optional
        Response column on the model scale (e.g. log-dollars); one gaussian response. Give it,
        or `responses`.
    covariates : sequence of str, default=()
        Columns released unchanged and used as regressors.
    responses : sequence of dict or ResponseConfig, default=()
        Several responses synthesised in sequence, ``[[data.responses]]`` (each a
        :class:`~synthgeo.config.ResponseConfig` or its keys: ``name``, ``family``
        {"gaussian", "bernoulli", "poisson"}, ``transform``, ``exposure``, ``positive``);
        each later one is fitted with the earlier ones as covariates and drawn from their
        synthetic values (docs/model.md). The result's ``.result`` is then a
        :class:`~synthgeo.pipeline.responses.SequentialResult`.
    missing : {"refuse", "drop"}, optional
        ``[data] missing``: a record with a missing response or covariate is refused (the
        default), or dropped (not released; counted).
    formula : str, optional
        The analyst's model, ``[utility] formula`` (default ``response ~ covariates``).
    implicates : int, optional
        L, ``[synthesis] n_implicates`` (default 100).
    seed : int, optional
        ``[sampling] seed``; same data and seed, same files. Default: a fresh random seed
        each run (the seed is a key: written to ``confidential/seed.txt`` only).
    id, x, y, subject, back_transform, transform : optional
        The ``[data]`` keys: record id column and the coordinate columns released with the
        location (default: as :func:`synthgeo.read_points` read them, else a new ``record`` id
        and the geometry only); subject id column; g, ``"exp"`` (default) or ``"identity"``;
        ``transform = "log"``: the response column is in its own units (dollars), modelled as
        its log and released in dollars.
    accept_small_extent : bool, optional
        ``[data] accept_small_extent``: go on, with a coded warning, when many distinct
        locations span an implausibly small extent (default: as :func:`synthgeo.read_points`
        was told, else False: refused as a likely unit error).
    accept_offshore : bool, optional
        ``[data] accept_offshore``: go on, with a coded warning, when more than half of the
        points lie over the sea (default: as :func:`synthgeo.read_points` was told, else
        False: refused as a likely unit factor or axis error).
    study_area : sequence of 4 floats or str, optional
        ``[data] study_area``: a lon/lat box ``[west, south, east, north]`` in degrees or a
        polygon file; any point outside it is refused (default: as
        :func:`synthgeo.read_points` was told, else none).
    data : DataConfig or dict, optional
        Any other ``[data]`` key (every key a spec's ``[data]`` takes, e.g.
        ``{"release_ids": "original"}``); the keyword arguments above replace its keys when
        given.
    model, sampling, synthesis, risk, utility, anonymity : config, optional
        The spec's sections (:class:`ModelConfig`, :class:`SamplingConfig`, ...); default
        their defaults. `formula`, `implicates` and `seed` replace their keys when given.
        E.g. ``risk=sg.RiskConfig(loo_unit="record")``: the leave-one-out baseline leaves out
        each record alone (default "subject" with `subject`, else "site";
        docs/risk-and-utility.md, "The leave-out unit").
    fitter, progress, progressbar : optional
        A replacement inference engine (:data:`synthgeo.pipeline.Fitter`); ``progress(message)``
        per stage; progress bars on stderr (default False).

    Returns
    -------
    Release
        ``.implicates`` (xarray, both models), ``.posterior`` (ArviZ), ``.risk``, ``.reiter``
        and ``.write(out)``.

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame, `covariates` is a string rather than a list, or a
        section has the wrong type.
    synthgeo.InputError
        Unusable records (no CRS, text or NaN in a numeric column, repeated ids, ...).
    synthgeo.SpecError
        An impossible setting (it names the key).
    synthgeo.ConvergenceError
        A fit fails its checks with ``on_convergence_failure = "stop"``.

    Examples
    --------
    Sixty simulated sales in a 1 km square near Sacramento, in UTM zone 10N (metres), fitted
    on the conjugate grid:

    >>> import geopandas, synthgeo as sg
    >>> from synthgeo.testing import simulate_gp
    >>> sim = simulate_gp(60, random_seed=1)
    >>> xy = sim["coords_m"] + [630_000.0, 4_270_000.0]  # easting, northing
    >>> pts = geopandas.GeoDataFrame(
    ...     {"log_price": sim["y"] + 12, "sqft": sim["X"][:, 1]},
    ...     geometry=geopandas.points_from_xy(*xy.T), crs="EPSG:32610")
    >>> rel = sg.synthesize(pts, response="log_price", covariates=["sqft"], implicates=5,
    ...                     seed=1, sampling=sg.SamplingConfig(sampler="grid"))
    >>> dict(rel.implicates.sizes)
    {'implicate': 5, 'record': 60}
    >>> sorted(rel.posterior)
    ['restricted', 'unrestricted']
    >>> rel.risk.to_dataframe().shape[0], list(rel.reiter["model"].unique())
    (60, ['confidential', 'unrestricted', 'restricted'])
    """
    spec = spec_for_points(
        points, response=response, covariates=covariates, responses=responses,
        missing=missing, formula=formula,
        implicates=implicates, seed=seed, id=id, x=x, y=y, subject=subject,
        back_transform=back_transform, transform=transform,
        accept_small_extent=accept_small_extent, accept_offshore=accept_offshore,
        study_area=study_area, data=data, model=model,
        sampling=sampling, synthesis=synthesis, risk=risk, utility=utility, anonymity=anonymity)
    return Release(result=run_release(spec, points=points, fitter=fitter, progress=progress,
                                      progressbar=progressbar))


def run(spec: ReleaseSpec | str | os.PathLike, *, fitter: Fitter | None = None,
        progress: Progress = None, progressbar: bool = False,
        previous: str | os.PathLike | None = None,
        register: str | os.PathLike | None = None,
        key_file: str | os.PathLike | None = None,
        allow_unsigned: bool = False) -> Release:
    """Run the release job a spec describes (``synthgeo run`` without writing).

    Parameters
    ----------
    spec : ReleaseSpec or path
        A spec, or its TOML file (e.g. ``models/sacramento_2bed.toml``).
    fitter, progress, progressbar
        As :func:`synthesize`.
    previous : path, optional
        An earlier release of the same records (the folder ``synthgeo run`` wrote): checked
        against the register (not its own release.json), records linked by ``[data] id``,
        each release alone and the pooled implicates scored and the chain recorded in
        release.json (``synthgeo run --previous``). Needs ``register``.
    register : path or URL, optional
        The release register (a SQLite file, or a SQLAlchemy URL such as
        ``postgresql+psycopg://...``; default: ``SYNTHGEO_REGISTER`` when set): a seed a
        registered release used is refused before fitting, and :meth:`Release.write`
        registers the release (docs/release.md, "The release register").
    key_file : path, optional
        The release key's file (default: ``SYNTHGEO_RELEASE_KEY``): release.json gets an HMAC
        under it. Required with a register unless ``allow_unsigned``.
    allow_unsigned : bool, default=False
        Register the release without a key (release.json and the report say it is unsigned).

    Returns
    -------
    Release
        The type :func:`synthesize` returns; ``.write(out)`` writes what ``synthgeo run``
        writes.

    Raises
    ------
    synthgeo.SpecError, synthgeo.InputError, synthgeo.ConvergenceError
        As :func:`synthesize`; InputError also when ``previous`` is given without a register
        or is not the release the register holds (fabricated, edited, unregistered, HMAC
        wrong), when the seed was used by a registered release, or when a register is given
        without a key and without ``allow_unsigned``.

    Examples
    --------
    The bundled Sacramento spec, on the conjugate grid and with 4 implicates:

    >>> import warnings, synthgeo as sg
    >>> from synthgeo.config import bundled_spec_path
    >>> spec = sg.load_spec(bundled_spec_path()).replace("sampling", sampler="grid")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the file's one known duplicate sale
    ...     rel = sg.run(spec.replace("synthesis", n_implicates=4))
    >>> rel.implicates["restricted"].shape
    (4, 140)
    """
    from synthgeo.register import make_ledger

    ledger = make_ledger(register, key_file=key_file, allow_unsigned=allow_unsigned,
                         need_register=previous is not None)
    return Release(result=run_release(as_spec(spec), fitter=fitter, progress=progress,
                                      progressbar=progressbar, previous=previous,
                                      ledger=ledger), ledger=ledger)


def draw(release_dir: str | os.PathLike, implicates: int, *, seed: int | None = None,
         register: str | os.PathLike | None = None,
         key_file: str | os.PathLike | None = None, allow_unsigned: bool = False,
         progress: Progress = None, progressbar: bool = False,
         refit: bool = False) -> Release:
    """Draw more implicates from a release's stored posterior, without refitting.

    ``synthgeo draw`` without writing (:mod:`synthgeo.pipeline.draw`): the folder is checked
    against the register (and, when signed, its release.json's HMAC), N posterior draws no
    implicate used before are taken from ``confidential/synthesiser.nc``, and the new
    implicates are scored like any release, with the cumulative risk over the earlier and the
    new implicates.

    Parameters
    ----------
    release_dir : path
        A registered release folder (``synthgeo run --register``).
    implicates : int
        N ≥ 2 new implicates.
    seed : int, optional
        The new implicates' seed (a key; default: a fresh random one). The same seed gives
        the same implicates.
    register, key_file, allow_unsigned
        As :func:`run`; a register is required.
    progress, progressbar
        As :func:`synthesize`.
    refit : bool, default=False
        When fewer than ``implicates`` posterior draws are unused, fit both models again from
        the stored state (the release's spec and records, checked by SHA-256; the fits' seed
        derived from ``seed``) instead of refusing; release.json says so
        (``synthesiser.drawn_from.refit``). Not used while enough draws are left.

    Returns
    -------
    Release
        ``.write(out)`` writes a new release folder and registers it after ``release_dir``.

    Raises
    ------
    synthgeo.InputError
        A missing folder, no register, a release.json the register does not hold or an
        HMAC that does not verify, changed files, no stored synthesiser (an older release),
        fewer unused draws than N without ``refit`` (the message names ``--refit``), other
        records, a seed used before.
    synthgeo.SpecError
        N not an integer ≥ 2, or a release a draw cannot extend (several responses,
        cross-fitted, risk-selected at-risk set).

    Examples
    --------
    >>> import synthgeo as sg
    >>> try:
    ...     sg.draw("/nonexistent", 50)
    ... except sg.InputError as exc:
    ...     print(str(exc)[:40])
    draw '/nonexistent': no release folder t
    """
    from synthgeo.pipeline.draw import check_draw_request, draw_release
    from synthgeo.register import make_ledger

    check_draw_request(release_dir, implicates)  # before the register is opened
    ledger = make_ledger(register, key_file=key_file, allow_unsigned=allow_unsigned)
    return Release(result=draw_release(release_dir, implicates, seed=seed, ledger=ledger,
                                       progress=progress, progressbar=progressbar,
                                       refit=refit),
                   ledger=ledger)


def compare(spec: ReleaseSpec | str | os.PathLike, *,
            points: geopandas.GeoDataFrame | None = None, fitter: Fitter | None = None,
            progress: Progress = None):
    """Unrestricted, restricted and suppressed fits side by side (``synthgeo compare``).

    Parameters
    ----------
    spec : ReleaseSpec or path
    points : geopandas.GeoDataFrame, optional
        Records in memory instead of the spec's file.
    fitter, progress
        As :func:`synthesize`.

    Returns
    -------
    synthgeo.studies.compare.ComparisonResult
        Posterior, utility, risk and spatial tables;
        :func:`~synthgeo.studies.compare.write_comparison` writes them.

    Raises
    ------
    synthgeo.SpecError
        Also when every record is at risk (nothing left for the suppressed baseline).

    Examples
    --------
    >>> import warnings, synthgeo as sg
    >>> from synthgeo.config import bundled_spec_path
    >>> spec = sg.load_spec(bundled_spec_path()).replace("sampling", sampler="grid")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the file's one known duplicate sale
    ...     result = sg.compare(spec.replace("synthesis", n_implicates=4))
    >>> sorted(result.fits)
    ['restricted', 'suppressed', 'unrestricted']
    """
    from synthgeo.studies.compare import compare_models

    return compare_models(as_spec(spec), points=points, fitter=fitter, progress=progress)


def show_versions(*, as_dict: bool = False) -> dict[str, str] | None:
    """Print (or return) the versions of synthgeo, Python and the main dependencies.

    What ``synthgeo --version`` prints: ``synthgeo X`` first, then one ``name version`` line
    per package (what a bug report needs).

    Parameters
    ----------
    as_dict : bool, default=False
        Return the versions instead of printing them.

    Returns
    -------
    dict or None

    Examples
    --------
    >>> import synthgeo as sg
    >>> sg.show_versions(as_dict=True)["synthgeo"] == sg.__version__
    True
    """
    from synthgeo._versions import package_versions

    versions = package_versions()
    if as_dict:
        return versions
    first = {"synthgeo": versions.pop("synthgeo")}
    print("\n".join(f"{k} {v}" for k, v in {**first, **versions}.items()))
    return None
