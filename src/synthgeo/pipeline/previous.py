r"""Repeated releases: verify an earlier release, pool its implicates, record the chain.

An attacker holding two releases of the same records holds L₁ + L₂ implicates of each, so
the risk that matters is the **cumulative** one: the within-tolerance share and the
implicate-average attack over the pooled implicates (docs/risk-and-utility.md, "Repeated
releases"; Reiter, Wang & Zhang 2014, doi:10.29012/jpc.v6i1.635). ``synthgeo run --previous
DIR`` / ``sg.run(spec, previous=DIR)``:

1. reads the **register** (:mod:`synthgeo.register`), not the folder's word: its release.json
   must be a registered release's (by SHA-256), its HMAC must verify under the release key
   when it was registered signed, and every file under ``release/`` must match the register's
   list (bytes and SHA-256), before anything is fitted; a fabricated or edited release, or a
   folder never registered, is refused (:class:`synthgeo.InputError`), and so is a seed any
   registered release used (one seed, one release, whatever ``--draws`` says);
2. links records by the id column (``[data] id``, the same in both releases);
3. after the new synthesis, scores each linked record on its pooled implicates (the earlier
   release's, read back on the model scale, then this one's restricted implicates) with
   :func:`synthgeo.risk.within_eps.within_eps_risk` (both attacks), beside this release alone;
4. records the chain in release.json (``previous_releases``): the earlier release.json's
   SHA-256, its register number and uid and its files' hashes, after the chain that release
   itself recorded; the writer registers the new release after it.

The cumulative figure a board reads is the **largest** of each member release alone and the
pooled one (``*_worst``): pooling is a weighted average, so a more protective later release can
lower the pooled share below an earlier release's own.

Records new in this release have no earlier implicates; their cumulative risk is this
release's and they are counted (``n_new``). Per-record cumulative risk is confidential.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._errors import InputError
from synthgeo._seed import SEED_FILE, read_seed
from synthgeo.config import ReleaseSpec
from synthgeo.io.file_list import check_file_list
from synthgeo.io.provenance import file_sha256
from synthgeo.register import Ledger, RegisteredRelease
from synthgeo.risk.within_eps import RiskResult, within_eps_risk

__all__ = ["cumulative_verdict", "PreviousRelease", "load_previous", "CumulativeRisk",
           "cumulative_risk", "check_release_files"]

IMPLICATES = "release/implicates.parquet"
#: The map from released to confidential ids, under ``confidential/`` (written by
#: :mod:`synthgeo.release.records`; read back here to link an earlier release's records).
ID_MAP_FILE = "release_ids.csv"


@dataclass(frozen=True, kw_only=True, eq=False)
class PreviousRelease:
    """An earlier release, its files verified against its release.json.

    Attributes
    ----------
    path : Path
        The earlier output folder.
    record : dict
        Its release.json.
    release_json_sha256 : str
    synthetic : pandas.DataFrame
        Rows: record ids; columns: its implicates; values: the released response on the
        model scale (log-dollars for a log model).
    entry : RegisteredRelease
        Its row in the register.
    predictive : tuple of pandas.DataFrame, optional
        ``(mean, sd)`` of its released model's predictive, each shaped as ``synthetic``
        (model scale), read from the summaries the register points to (SHA-256 checked);
        None when the register holds none (then the pooled figures are realised shares only).
    """

    path: Path
    record: dict[str, Any] = field(repr=False)
    release_json_sha256: str
    synthetic: pd.DataFrame = field(repr=False)
    entry: RegisteredRelease | None = field(default=None, repr=False)
    predictive: tuple[pd.DataFrame, pd.DataFrame] | None = field(default=None, repr=False)

    def chain_entry(self) -> dict[str, Any]:
        """Return what release.json records of this earlier release (hashes, no path)."""
        r = self.record
        e = self.entry
        return {"release_json_sha256": self.release_json_sha256,
                "register_id": None if e is None else e.id,
                "release_uid": None if e is None else e.release_uid,
                "signed": None if e is None else e.signed,
                "seed_sha256": r.get("seed_sha256"),
                "created_at": r.get("created_at"), "n_records": r.get("n_records"),
                "n_implicates": r.get("n_implicates"),
                "release_files": [{"path": f["path"], "sha256": f["sha256"]}
                                  for f in r.get("release_files", [])]}

    def chain(self) -> list[dict[str, Any]]:
        """Return the earlier releases' chain, oldest first, this one last."""
        earlier = (self.record.get("previous_releases") or {}).get("chain", [])
        return [*earlier, self.chain_entry()]


def _refuse(folder: Path, what: str) -> InputError:
    return InputError(f"--previous {str(folder)!r}: {what}; nothing was fitted. Give the "
                      "folder `synthgeo run` wrote for the earlier release, unchanged")


def load_previous(folder: str | os.PathLike, spec: ReleaseSpec, *,
                  frame_sha256: str | None = None,
                  ledger: Ledger | None = None) -> PreviousRelease:
    """Read an earlier release and verify it against the register.

    Parameters
    ----------
    folder : path
        The earlier ``synthgeo run`` output (``release.json``, ``release/``).
    spec : ReleaseSpec
        This release's spec: ``[data] id`` (must be set, and equal the earlier one's),
        ``response``, ``transform``.
    frame_sha256 : str, optional
        This release's records (``gdf.attrs["frame_sha256"]``): after an earlier release that
        applied the location treatment they must be the same records.
    ledger : Ledger
        The register (required) and the release key (:func:`synthgeo.register.make_ledger`).

    Returns
    -------
    PreviousRelease

    Raises
    ------
    synthgeo.InputError
        No register; no release.json, or one the register does not hold (fabricated, edited,
        never registered), an HMAC that does not verify, a file missing or changed against
        the register (size or SHA-256), a file under ``release/`` that the register does not
        list (:meth:`synthgeo.register.Register.verify_folder`), no ``[data] id``, another
        id column or response than the earlier release, an id repeated within an implicate, this
        spec's seed equal to a seed of the chain or to the earlier release's
        ``confidential/seed.txt`` (its implicates would repeat), other
        covariates, responses or transform (a column released real that was synthesised), or
        another ``[anonymity]`` after a release that applied the location treatment.

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> try:
    ...     load_previous("/nonexistent", load_spec(bundled_spec_path()))
    ... except Exception as exc:
    ...     print(str(exc)[:62])
    --previous reads the release register, not the folder's own re
    """
    folder = Path(folder)
    if ledger is None or ledger.register is None:
        from synthgeo.register import make_ledger

        make_ledger(need_register=True, environ={})  # raises: the message names --register
    entry, record = ledger.register.verify_folder(folder, ledger.key,
                                                  allow_unsigned=ledger.allow_unsigned)
    listed = {f["path"] for f in entry.files}
    if IMPLICATES not in listed:
        raise _refuse(folder, f"the register does not list its {IMPLICATES}")
    chain = (record.get("previous_releases") or {}).get("chain", [])
    seed = spec.sampling.seed
    earlier_seeds = {record.get("seed_sha256"), *(e.get("seed_sha256") for e in chain),
                     *(e.seed_hash for e in ledger.register.chain(entry.id))} - {None}
    if seed is not None and set(ledger.seed_hashes(seed)) & earlier_seeds:
        raise InputError(f"--previous {str(folder)!r}: this run's seed (`[sampling] seed` or "
                         "--seed) is one an earlier release in the chain used, so its "
                         "implicates would repeat that release's (no new draws, and the pooled "
                         "risk would count them twice); set a new `[sampling] seed` (or leave "
                         "it out for a fresh one)")
    if seed is not None and read_seed(folder / "confidential") == int(seed):
        # the folder's own seed file, whatever the hashes say (an unkeyed or re-keyed hash, a
        # register row without one): the same seed gives the same implicates again
        raise InputError(f"--previous {str(folder)!r}: this run's seed is the earlier release's "
                         f"(its confidential/{SEED_FILE}), so its implicates would repeat that "
                         "release's (no new information, and the cumulative risk would count "
                         "them twice); give a new seed (`--seed N`, or `[sampling] seed` in the "
                         "spec) or leave it out for a fresh one")
    _check_same_release_design(folder, record.get("spec", {}), spec,
                               earlier_frame_sha256=(record.get("input") or {}).get(
                                   "frame_sha256"), frame_sha256=frame_sha256)
    d, prev = spec.data, record.get("spec", {}).get("data", {})
    if not d.id:
        raise InputError("--previous links records by id: set `[data] id` (the id column of "
                         "both releases)")
    if prev.get("id") != d.id:  # responses: _check_same_release_design
        raise _refuse(folder, f"its `[data] id` is {prev.get('id')!r}, this spec's "
                              f"{d.id!r}: records cannot be linked")
    frame = pd.read_parquet(folder / IMPLICATES, columns=["implicate", d.id, d.response])
    if frame.duplicated(["implicate", d.id]).any():
        raise _refuse(folder, f"an id in `{d.id}` repeats within an implicate")
    wide = frame.pivot(index=d.id, columns="implicate", values=d.response)
    if prev.get("release_ids", "original") == "pseudonymous":  # back to the confidential ids
        wide = _confidential_index(folder, wide, d.id, record.get("release_ids_sha256"))
    if getattr(d, "transform", None) == "log":  # released on the original scale
        wide = np.log(wide)
    predictive = None
    if entry.summary is not None:  # the register's pointer, its SHA-256 checked on reading
        summ = ledger.register.read_summary(entry)
        predictive = tuple(summ.pivot(index="record", columns="implicate", values=v)
                           for v in ("mean", "sd"))
        if set(predictive[0].index) != set(wide.index):
            raise _refuse(folder, "its predictive summaries in the register are not of its "
                                  "released records")
    return PreviousRelease(path=folder, record=record,
                           release_json_sha256=entry.release_json_sha256, synthetic=wide,
                           entry=entry, predictive=predictive)


def check_release_files(folder: str | os.PathLike, record: dict[str, Any], *,
                        option: str = "--previous") -> None:
    """Check the files under ``release/`` against release.json (bytes and SHA-256).

    Parameters
    ----------
    folder : path
        A ``synthgeo run`` output folder.
    record : dict
        Its release.json.
    option : str, default="--previous"
        How the error names the folder's source (``verify`` for ``synthgeo verify``).

    Raises
    ------
    synthgeo.InputError
        No file listed, a listed file missing or changed, an unlisted file under ``release/``,
        or no implicates listed.
    """
    folder = Path(folder)

    def refuse(what: str) -> InputError:
        if option == "--previous":
            return _refuse(folder, what)
        return InputError(f"{option} {str(folder)!r}: {what}; give the folder `synthgeo run` "
                          "wrote, unchanged")

    files = record.get("release_files") or []
    if not files:
        raise refuse("its release.json lists no release files")
    check_file_list(folder, files, listed_in="its release.json", refuse=refuse)
    if IMPLICATES not in {f["path"] for f in files}:
        raise refuse(f"its release.json does not list {IMPLICATES}")


def _check_same_release_design(folder: Path, earlier: dict[str, Any], spec: ReleaseSpec, *,
                               earlier_frame_sha256: str | None = None,
                               frame_sha256: str | None = None) -> None:
    """Refuse a release whose published columns or location treatment differ from the earlier one.

    A column synthesised before and released real now (or the reverse), another response scale,
    or locations an earlier release withheld or coarsened and this one would publish exactly,
    undo the earlier release's protection whatever the pooled risk says.
    """
    d, prev = spec.data, earlier.get("data", {})
    prev_responses = [(r.get("name"), r.get("family", "gaussian"), r.get("transform"))
                      for r in prev.get("responses") or []] or [
        (prev.get("response"), "gaussian", prev.get("transform"))]
    now_responses = [(r.name, r.family, r.transform) for r in d.response_configs]
    checks = [("covariates", sorted(prev.get("covariates") or []), sorted(d.covariates)),
              ("responses", [r[0] for r in prev_responses], [r[0] for r in now_responses]),
              ("responses' family and transform", prev_responses, now_responses)]
    for key, was, now in checks:
        if was != now:
            raise _refuse(folder, f"its `[data] {key}` is {was!r}, this spec's {now!r}: a "
                                  "repeated release must publish the same columns on the same "
                                  "scale (a response released real would undo the earlier "
                                  "synthesis)")
    prev_anon = earlier.get("anonymity") or {}
    if prev_anon.get("treatment") == "apply":
        if frame_sha256 is not None and earlier_frame_sha256 != frame_sha256:
            raise _refuse(folder, "it applied the outlier policy's location treatment and this "
                                  "release's records differ (input file, `[data] query` or "
                                  "values: another frame_sha256): new neighbours change the "
                                  "policy's labels, and records moved or withheld before "
                                  "could be published exactly; release the same records")
        now_anon = spec.to_dict().get("anonymity", {})
        differ = [k for k in sorted(set(prev_anon) | set(now_anon))
                  if k != "on_location_failure" and prev_anon.get(k) != now_anon.get(k)]
        if differ:
            raise _refuse(folder, "it applied the outlier policy's location treatment (records "
                                  "withheld or coarsened) and this spec's `[anonymity]` differs "
                                  f"in {differ}: those locations would be published more "
                                  "precisely; use the earlier release's `[anonymity]`")


def _confidential_index(folder: Path, wide: pd.DataFrame, id_column: str,
                        sha256: str | None) -> pd.DataFrame:
    """Re-index an earlier release's implicates from its pseudonyms to the confidential ids.

    Through the map that release kept in ``confidential/`` (:mod:`synthgeo.release.records`);
    its confidential ids are read back as the points file's ids are (text kept where reading
    them as numbers would change them).
    """
    from synthgeo.io.files import keep_id_text

    path = folder / "confidential" / ID_MAP_FILE
    if not path.is_file():
        raise _refuse(folder, f"its ids are release pseudonyms and confidential/{ID_MAP_FILE}, "
                              "which links them to the records, is missing")
    if sha256 is None or file_sha256(path) != sha256:  # any other permutation would link
        raise _refuse(folder, f"confidential/{ID_MAP_FILE} does not match the SHA-256 in its "
                              "release.json (`release_ids_sha256`): records cannot be linked")
    column = "confidential_id" if id_column == "release_id" else id_column
    id_map = keep_id_text(pd.read_csv(path, dtype={column: str}), column)
    if set(id_map["release_id"]) != set(wide.index) or id_map[column].duplicated().any():
        raise _refuse(folder, f"confidential/{ID_MAP_FILE} does not match its released ids")
    lookup = dict(zip(id_map["release_id"], id_map[column]))
    return wide.rename(index=lookup).rename_axis(id_column)


@dataclass(frozen=True, kw_only=True, eq=False)
class CumulativeRisk:
    """Risk of the linked records: this release alone vs pooled with the earlier ones.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row per group (``all``, ``at_risk``, ``other``) × measure: ``n_records``;
        ``mean_this``, ``mean_previous``, ``mean_cumulative`` (share of implicates within
        tolerance: this release alone, the earlier release alone, pooled) and ``mean_worst``,
        their largest, which the board reads (``worst_mean_of`` names it); the same four
        ``attack_share_*`` columns for the implicate-average attack, and
        ``worst_attack_share_of``.
    this, previous, cumulative : RiskResult
        Per-record risk of the linked records (confidential): this release's implicates, the
        earlier release's, the pooled ones.
    record_id : ndarray
        Ids of the linked records.
    n_linked, n_new, n_implicates_pooled : int
    chain : list of dict
        :meth:`PreviousRelease.chain`.
    rb : dict, optional
        Rao-Blackwellised within-tolerance probability per linked record, by measure key and
        member (``"this"``, ``"previous"``, ``"cumulative"``): r̃ of each release from its
        predictive, pooled as the L-weighted mean (L_prev r̃_prev + L r̃_this) / (L_prev + L).
        None when the earlier release's predictive summaries are not in the register.
    """

    summary: pd.DataFrame
    this: RiskResult = field(repr=False)
    cumulative: RiskResult = field(repr=False)
    previous: RiskResult | None = field(default=None, repr=False)
    record_id: np.ndarray = field(repr=False)
    n_linked: int
    n_new: int
    n_implicates_pooled: int
    chain: list[dict[str, Any]]
    verdict: Any = None
    rb: dict[str, dict[str, np.ndarray]] | None = field(default=None, repr=False)

    def to_record(self) -> dict[str, Any]:
        """release.json's ``previous_releases`` block (aggregates and hashes only)."""
        return {"chain": self.chain, "n_linked": self.n_linked, "n_new": self.n_new,
                "n_implicates_pooled": self.n_implicates_pooled,
                "cumulative_risk": self.summary.to_dict("records"),
                "verdict": None if self.verdict is None else self.verdict.to_dict()}

    def per_record(self, id_column: str) -> pd.DataFrame:
        """Per-record risk: this release, the earlier one alone, pooled (confidential)."""
        parts = [pd.DataFrame({id_column: self.record_id})]
        for label, rr in (("this", self.this), ("previous", self.previous),
                          ("cumulative", self.cumulative)):
            if rr is not None:
                parts.append(rr.to_dataframe().reset_index(drop=True).add_suffix(f"_{label}"))
        return pd.concat(parts, axis=1)


def _measures(rr: RiskResult):
    """(measure key, risk variable, attack variable, dim, position) per tolerance."""
    ds = rr.per_record
    for kind, dim in (("abs", "eps"), ("rel", "p")):
        for j, tol in enumerate(ds[dim].values):
            key = f"{kind}:{np.format_float_positional(float(tol), trim='-')}"
            yield key, f"risk_{kind}", f"attack_{kind}", dim, j


def cumulative_risk(previous: PreviousRelease, spec: ReleaseSpec, truth: np.ndarray,
                    record_id: np.ndarray, synthetic: np.ndarray,
                    at_risk: np.ndarray, predictive=None) -> CumulativeRisk:
    """Score the linked records on each release alone and pooled (both attacks).

    The board's cumulative figure is the largest of the three (``*_worst``): the pooled share
    is a weighted average of the members', so it can fall below one of them.

    Parameters
    ----------
    previous : PreviousRelease
    spec : ReleaseSpec
        ``[risk] eps``, ``p``; ``[data] back_transform``.
    truth : ndarray of shape (n_records,)
        y, model scale (confidential).
    record_id : ndarray of shape (n_records,)
    synthetic : ndarray of shape (L, n_records)
        This release's (restricted) implicates, model scale.
    at_risk : ndarray of bool, shape (n_records,)
    predictive : Predictive, optional
        This release's released predictive, shape (L, n_records): with the earlier release's
        (``previous.predictive``) the pooled Rao-Blackwellised shares (``rb_*`` columns and
        :attr:`CumulativeRisk.rb`).

    Returns
    -------
    CumulativeRisk

    Raises
    ------
    synthgeo.InputError
        If no record of this release is in the earlier one, or an implicate repeats one of
        the earlier release's.
    """
    ids = np.asarray(record_id)
    linked = np.isin(ids, previous.synthetic.index.to_numpy())
    if not linked.any():
        raise InputError(f"--previous {str(previous.path)!r}: none of this release's ids is "
                         "in the earlier release; link records by the same id column")
    prev = previous.synthetic.loc[ids[linked]].to_numpy(float).T  # (L_prev, n_linked)
    this = np.asarray(synthetic, float)[:, linked]
    # an implicate repeated from the earlier release (same seed behind an edited release.json,
    # say) adds nothing: refuse rather than count it twice (to 1e-6 on the model scale, the
    # precision the earlier release's files were read back at)
    digest = {hash(np.round(row, 6).tobytes()) for row in prev}
    if any(hash(np.round(row, 6).tobytes()) in digest for row in this):
        raise InputError(f"--previous {str(previous.path)!r}: an implicate of this release "
                         "repeats one of the earlier release's (the same seed?); nothing was "
                         "written: set a new `[sampling] seed`")
    pooled = np.concatenate([prev, this])
    y = np.asarray(truth, float)[linked]

    def score(arr: np.ndarray) -> RiskResult:
        da = xr.DataArray(arr, dims=("implicate", "record"),
                          coords={"implicate": np.arange(1, arr.shape[0] + 1),
                                  "record": ids[linked]})
        return within_eps_risk(da, y, eps=spec.risk.eps, p=spec.risk.p,
                               transform=spec.data.back_transform)

    r_this, r_prev, r_cum = score(this), score(prev), score(pooled)
    groups = {"all": np.ones(int(linked.sum()), bool), "at_risk": np.asarray(at_risk)[linked]}
    groups["other"] = ~groups["at_risk"]
    rb = _pooled_rb(previous, spec, y, ids[linked], linked, predictive, r_this)
    rows = []
    for gname, mask in groups.items():
        for key, risk, attack, dim, j in _measures(r_this):
            vals = {}
            for label, rr in (("this", r_this), ("previous", r_prev), ("cumulative", r_cum)):
                ds = rr.per_record
                vals[f"mean_{label}"] = (float(ds[risk].transpose("record", dim).values[mask, j]
                                               .mean()) if mask.any() else float("nan"))
                vals[f"attack_share_{label}"] = (
                    float(ds[attack].transpose("record", dim).values[mask, j].mean())
                    if mask.any() else float("nan"))
            for stat, of in (("mean", "worst_mean_of"), ("attack_share", "worst_attack_share_of")):
                members = {m: vals[f"{stat}_{m}"] for m in ("this", "previous", "cumulative")}
                worst = max(members, key=lambda m: -np.inf if np.isnan(members[m])
                            else members[m])
                vals[f"{stat}_worst"], vals[of] = members[worst], worst
            for label in ("this", "previous", "cumulative"):
                vals[f"rb_{label}"] = (float(rb[key][label][mask].mean())
                                       if rb is not None and mask.any() else float("nan"))
            vals["rb_worst"] = (max(vals["rb_this"], vals["rb_previous"], vals["rb_cumulative"])
                                if rb is not None and mask.any() else float("nan"))
            rows.append({"group": gname, "measure": key, "n_records": int(mask.sum()), **vals})
    return CumulativeRisk(summary=pd.DataFrame(rows), this=r_this, cumulative=r_cum,
                          previous=r_prev,
                          record_id=ids[linked], n_linked=int(linked.sum()),
                          n_new=int((~linked).sum()), n_implicates_pooled=pooled.shape[0],
                          chain=previous.chain(), rb=rb)


def _pooled_rb(previous: PreviousRelease, spec: ReleaseSpec, y: np.ndarray, ids: np.ndarray,
               linked: np.ndarray, predictive, r_this: RiskResult):
    """r̃ per linked record and measure: this release, the earlier one, pooled (L-weighted)."""
    if previous.predictive is None or predictive is None:
        return None
    from synthgeo.pipeline.data import response_scale
    from synthgeo.risk.measure import Measure
    from synthgeo.risk.predictive import Predictive
    from synthgeo.risk.rao_blackwell import rb_risk

    mean, sd = (f.loc[ids].to_numpy(float).T for f in previous.predictive)  # (L_prev, n)
    prev = Predictive(mean=mean, sd=sd, name="previous")
    this = Predictive(mean=np.asarray(predictive.mean)[:, linked],
                      sd=np.asarray(predictive.sd)[:, linked], name="release")
    g = response_scale(spec).g_name
    lp, lt = prev.n_implicates, this.n_implicates
    out = {}
    for key, *_ in _measures(r_this):
        m = Measure.parse(key)
        a, b = rb_risk(prev, y, m, g), rb_risk(this, y, m, g)
        out[key] = {"this": b, "previous": a, "cumulative": (lp * a + lt * b) / (lp + lt)}
    return out


def cumulative_verdict(cumulative: CumulativeRisk, scores, targets, record_id: np.ndarray,
                       release_attacker=None):
    """Judge ``[risk.targets]`` on the pooled implicates of the linked records (issue 11, item 9).

    For record i, a_i(cumulative) = the pooled figure − the baseline this release's verdict
    used for i (b_i = release_i − a_i of the restricted model, so the same stronger baseline,
    chosen once per measure and attack): the pooled figure is, for the share attack, the
    pooled Rao-Blackwellised probability (L_prev r̃_prev + L r̃_this) / (L_prev + L) when the
    register holds the earlier release's predictive summaries (:attr:`CumulativeRisk.rb`),
    else the realised share of pooled implicates within the tolerance; for the average attack
    the pooled implicate-average hit, 0/1.

    Parameters
    ----------
    cumulative : CumulativeRisk
    scores : RiskScores
        This release's risk stage (:func:`synthgeo.pipeline.risk_stage.score_release_risk`).
    targets : sequence of RiskTarget
    record_id : ndarray of shape (n_records,)
        This release's record ids (in ``scores``' record order).
    release_attacker : mapping of (measure key, attack) to ndarray (n_records,), optional
        The release attacker's attributable risk at the pooled implicates
        (:attr:`synthgeo.pipeline.release_attack.ReleaseAttack.pooled_by_target`), judged on the
        linked records as well (``attacker = "release_attacker"``).

    Returns
    -------
    RiskVerdict
        ``cumulative=True``; NOT ASSESSED without targets.
    """
    from synthgeo.risk.attributable import _per_record
    from synthgeo.risk.measure import Measure
    from synthgeo.risk.verdict import RiskVerdict, _checks

    pos = {v: i for i, v in enumerate(np.asarray(record_id).tolist())}
    idx = np.array([pos[v] for v in np.asarray(cumulative.record_id).tolist()], dtype=int)
    rr = scores.summary.records["restricted"]
    ds = cumulative.cumulative.per_record
    checks = []
    for t in targets:
        m = Measure.parse(t.measure)
        a_this = scores.summary.record_attributable("restricted", m.key, t.attack)
        if t.attack == "share":
            release = _per_record(rr, m.key, "share", "release")
            pooled = ds["risk_rel" if m.kind == "rel" else "risk_abs"]
            if cumulative.rb is not None and m.key in cumulative.rb:  # Rao-Blackwellised
                baseline = (release - a_this)[idx]
                checks.extend(_checks(t, cumulative.rb[m.key]["cumulative"] - baseline))
                continue
        else:
            form = scores.summary.release_form("restricted", m.key)
            release = _per_record(rr, m.key, "average", f"release/{form}")
            pooled = ds["attack_rel" if m.kind == "rel" else "attack_abs"]
        dim = "p" if m.kind == "rel" else "eps"
        pooled = pooled.sel({dim: m.tol}).transpose("record").values.astype(float)
        baseline = (release - a_this)[idx]
        checks.extend(_checks(t, pooled - baseline))
    for t in targets if release_attacker else ():
        a = release_attacker.get((Measure.parse(t.measure).key, t.attack))
        if a is not None:
            checks.extend(_checks(t, np.asarray(a, float)[idx], attacker="release_attacker"))
    statuses = {c.status for c in checks}
    status = "FAIL" if "FAIL" in statuses else "PASS" if "PASS" in statuses else "NOT ASSESSED"
    return RiskVerdict(status=status, model="restricted", checks=tuple(checks), cumulative=True)
