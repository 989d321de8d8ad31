"""``sg.verify``: one verification request, from the release folder to the released measures.

Steps (docs/risk-and-utility.md, "Verification"): read ``RELEASE_DIR/release.json`` (the spec
as run) and check the released files against it; check the analyst's formula (the spec's
allow-list, covariates only on the right side); refuse the confidential file when its SHA-256
differs from the one the release was made from; refuse a term resting on fewer than
``[anonymity] k`` records; check and charge the analyst's ε; fit the model to the released
implicates (Reiter's rules) and to the confidential records (M disjoint subsets under
differential privacy, all records in the agency's non-private mode); return the measures only.
Every request, granted or refused, is appended to the store's audit log.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from synthgeo._errors import InputError, SpecError
from synthgeo.config import spec_from_dict
from synthgeo.io.paths import not_a_file
from synthgeo.io.provenance import file_sha256
from synthgeo.pipeline.data import prepare_data
from synthgeo.pipeline.previous import IMPLICATES, check_release_files
from synthgeo.release.writer import VERIFICATION_STORE
from synthgeo.verification.analysis import (
    Analysis,
    check_analysis,
    check_records_behind_terms,
    design,
)
from synthgeo.verification.budget import BudgetStore
from synthgeo.verification.measures import (
    MEASURES,
    exact_measures,
    fit_confidential,
    subset_measures,
    synthetic_estimate,
)
from synthgeo.verification.privacy import partition, release_means

__all__ = ["VerifyResult", "verify", "default_subsets", "DEFAULT_STORE"]

#: The store's default place, under the release's confidential folder.
DEFAULT_STORE = VERIFICATION_STORE
#: Records per coefficient a subset should hold at least (the default M).
RECORDS_PER_COEF = 10
#: Records a subset should hold at least (the default M).
MIN_SUBSET = 25


def default_subsets(n_records: int, n_coef: int) -> int:
    """M = ⌊N / max(25, 10 p)⌋: each subset holds ≥ 25 and ≥ 10 records per coefficient.

    Examples
    --------
    >>> default_subsets(140, 2), default_subsets(10_000, 3)
    (5, 333)
    """
    return n_records // max(MIN_SUBSET, RECORDS_PER_COEF * n_coef)


@dataclass(frozen=True, kw_only=True, eq=False)
class VerifyResult:
    """The released answer to a verification request: measures per coefficient, no estimate.

    Attributes
    ----------
    measures : pandas.DataFrame
        Index ``term``; columns ``ci_overlap``, ``sign_agreement``,
        ``significance_agreement`` (noisy shares in [0, 1] under differential privacy; the
        exact values in the non-private mode).
    mode : {"dp", "non_private"}
    epsilon : float or None
        ε charged (None in the non-private mode).
    n_subsets : int or None
        M, the disjoint subsets of the confidential records (dp).
    sensitivity : float or None
        L1 sensitivity Δ₁ = 3k/M of the released vector (dp).
    laplace_scale : float or None
        b = Δ₁/ε; the noise's sd is √2 b.
    analyst, formula, family, alpha, release_json_sha256, budget : as requested / charged
    """

    measures: pd.DataFrame
    mode: str
    epsilon: float | None
    n_subsets: int | None
    sensitivity: float | None
    laplace_scale: float | None
    analyst: str
    formula: str
    family: str
    alpha: float
    release_json_sha256: str
    budget: dict[str, float | None] = field(default_factory=dict)
    reason: str | None = None

    def __repr__(self) -> str:
        """Show the request and the noise; the measures are in :attr:`measures`."""
        noise = (f"ε = {self.epsilon:g}, Laplace scale {self.laplace_scale:.3g}"
                 if self.mode == "dp" else "non-private (agency setting)")
        return (f"VerifyResult({self.formula!r}, {self.family}, {len(self.measures)} terms, "
                f"{noise})")

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON answer: the measures, the mechanism and its noise, the budget."""
        rows = [{"term": t, **{m: float(r[m]) for m in MEASURES}}
                for t, r in self.measures.iterrows()]
        return {
            "synthgeo_verification": 1, "analyst": self.analyst,
            "release_json_sha256": self.release_json_sha256, "formula": self.formula,
            "family": self.family, "alpha": self.alpha, "mode": self.mode,
            "mechanism": (None if self.mode != "dp" else
                          "subsample and aggregate (Barrientos et al. 2018): the mean over M "
                          "disjoint subsets of the confidential records of each measure in "
                          "[0, 1], plus Laplace noise of scale 3k/(M ε), clipped to [0, 1]"),
            "epsilon": self.epsilon, "n_subsets": self.n_subsets,
            "sensitivity": self.sensitivity, "laplace_scale": self.laplace_scale,
            "noise_sd": None if self.laplace_scale is None else float(
                np.sqrt(2) * self.laplace_scale),
            "non_private_reason": self.reason, "measures": rows, "budget": self.budget,
        }

    def write(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_dict` as JSON to ``path``; return it."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path


def verify(release_dir: str | os.PathLike, formula: str | None = None, *,
           family: str = "gaussian", alpha: float | None = None, analysis: Analysis | None = None,
           analyst: str, epsilon: float = 1.0, budget: float | None = None,
           store: str | os.PathLike | None = None, n_subsets: int | None = None,
           data: str | os.PathLike | None = None, non_private_reason: str | None = None,
           seed: int | None = None) -> VerifyResult:
    """Verify an analyst's model on the confidential data; return only verification measures.

    Parameters
    ----------
    release_dir : path
        A ``synthgeo run`` output folder (``release.json``, ``release/``).
    formula : str, optional
        The analyst's model, e.g. ``"log_price ~ sqft_living"`` (or give ``analysis``).
    family : {"gaussian", "bernoulli"}, default="gaussian"
        OLS, or logistic regression on a 0/1 left side.
    alpha : float, optional
        (1 − α) intervals; default ``analysis.alpha``, else the release's
        ``[utility] alpha``.
    analysis : Analysis, optional
        Formula, family and alpha together (:func:`synthgeo.verification.analysis.load_analysis`).
    analyst : str
        Who is charged ε.
    epsilon : float, default=1.0
        ε of this request (differential privacy).
    budget : float, optional
        The agency sets the analyst's total ε to this before the request.
    store : path, optional
        The budget store and audit log; default ``RELEASE_DIR/confidential/verification.sqlite``
        (use one store for every release of the same confidential records).
    n_subsets : int, optional
        M; default :func:`default_subsets`.
    data : path, optional
        The confidential file; default the release's ``[data] path``. Its SHA-256 must be
        the one in release.json.
    non_private_reason : str, optional
        The agency's reason for an exact, non-private answer (no noise, no ε charged; logged).
    seed : int, optional
        Seed of the partition and the noise (tests); default fresh entropy. Never written out.

    Returns
    -------
    VerifyResult

    Raises
    ------
    synthgeo.SpecError
        A formula outside the allow-list (code, unknown names, the response on the right).
    synthgeo.InputError
        A changed release, a confidential file whose SHA-256 differs, a term resting on fewer
        than ``[anonymity] k`` records, no or a spent budget, too few records for M ≥ 2.

    Examples
    --------
    >>> import synthgeo as sg
    >>> sg.verify("/nonexistent", "log_price ~ sqft_living", analyst="ana")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: verify '/nonexistent': no release.json there; ...
    """
    release_dir = Path(release_dir)
    if not isinstance(analyst, str) or not analyst.strip():
        raise InputError("name the analyst (--analyst NAME): ε is charged to them")
    if analysis is None and formula is None:
        raise SpecError("give the analyst's model: `formula` (and `family`) or `analysis`")
    if analysis is None:
        analysis = Analysis(formula, family, alpha)
    elif alpha is not None:
        analysis = dataclasses.replace(analysis, alpha=alpha)
    if not (release_dir / "release.json").is_file():
        raise InputError(f"verify {str(release_dir)!r}: no release.json there; give the folder "
                         "`synthgeo run` wrote")
    dp = non_private_reason is None
    if not dp and not str(non_private_reason).strip():
        raise InputError("a non-private answer needs the agency's reason "
                         "(--agency-non-private REASON), which is logged")
    if dp and (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float))):
        raise InputError(f"`epsilon` (--epsilon) must be a positive finite number, got "
                         f"{epsilon!r}")
    if n_subsets is not None and (isinstance(n_subsets, bool) or not isinstance(n_subsets, int)):
        raise InputError(f"`n_subsets` (--subsets) must be a whole number ≥ 2, got "
                         f"{n_subsets!r}")
    eps = float(epsilon) if dp else None
    if dp and not (np.isfinite(eps) and eps > 0):
        raise InputError(f"`epsilon` (--epsilon) must be a positive finite number, got "
                         f"{epsilon!r}")
    store = BudgetStore(release_dir / DEFAULT_STORE if store is None else store)
    rec_sha = file_sha256(release_dir / "release.json")
    if budget is not None:
        store.set_total(analyst, budget)
    try:
        return _verify(release_dir, analysis, analyst=analyst, eps=eps, store=store,
                       n_subsets=n_subsets, data=data, reason=non_private_reason, seed=seed,
                       rec_sha=rec_sha)
    except (InputError, SpecError) as exc:
        store.log_refusal(str(analyst), formula=analysis.formula, family=analysis.family,
                          epsilon=eps, reason=" ".join(str(exc).split()),
                          release_json_sha256=rec_sha)
        raise


def _verify(release_dir: Path, analysis: Analysis, *, analyst, eps, store: BudgetStore,
            n_subsets, data, reason, seed, rec_sha) -> VerifyResult:
    store.check(analyst, eps)  # a spent budget refuses before anything is read
    record = json.loads((release_dir / "release.json").read_text(encoding="utf-8"))
    spec = spec_from_dict(record["spec"])
    if analysis.alpha is None:  # the release's [utility] alpha
        analysis = dataclasses.replace(analysis, alpha=spec.utility.alpha)
    d = spec.data
    if d.sequential:
        raise InputError("verify supports releases of one response; this release has "
                         "[[data.responses]]")
    check_analysis(analysis, d.response, list(d.covariates))
    # the released implicates, checked against release.json (bytes and SHA-256)
    check_release_files(release_dir, record, option="verify")
    conf_path = Path(data) if data is not None else spec.data_path()
    want = (record.get("input") or {}).get("sha256")
    if conf_path is None or want is None:
        raise InputError("this release was made from records handed over in memory: "
                         "verification needs the confidential file it was released from")
    if (why := not_a_file(conf_path)) is not None:
        raise InputError(f"the confidential file {str(conf_path)!r} {why}: the agency verifies "
                         "against the data the release was made from; give that file (--data "
                         "PATH)")
    if file_sha256(conf_path) != want:
        raise InputError("the confidential file's SHA-256 differs from the one in release.json: "
                         "the agency verifies against the data the release was made from; "
                         "give that file (--data PATH)")
    if data is not None:
        spec = spec.replace("data", path=str(conf_path.resolve()))
    with warnings.catch_warnings():  # the reader's notices may name records
        warnings.simplefilter("ignore")
        conf = prepare_data(spec).frame
        released = pd.read_parquet(release_dir / IMPLICATES)
    # one frame per implicate, the records in one order (the id column's, when there is one)
    implicates = [(g.sort_values(d.id, kind="stable") if d.id in g else g)
                  .drop(columns="implicate").reset_index(drop=True)
                  for _, g in released.groupby("implicate", sort=True)]
    X, names = design(analysis, conf)
    check_records_behind_terms(X, names, spec.anonymity.k)
    m = default_subsets(len(conf), len(names)) if n_subsets is None else int(n_subsets)
    dp = eps is not None
    if dp and not 2 <= m <= len(conf) // max(len(names) + 1, 2):
        raise InputError(f"{len(conf)} records cannot be split into M = {m} subsets of more "
                         f"than {len(names)} records each (M ≥ 2 is needed): too few records "
                         "for a differentially private answer; give a smaller --subsets or "
                         "fewer terms")
    try:
        synthetic = synthetic_estimate(analysis, implicates, response=d.response)
    except Exception as exc:  # noqa: BLE001 - patsy/statsmodels raise many types
        raise SpecError(f"the analyst's formula {analysis.formula!r} cannot be fitted to the "
                        f"released implicates: {type(exc).__name__}") from None
    store.charge(analyst, eps, formula=analysis.formula, family=analysis.family,
                 release_json_sha256=rec_sha, reason=reason)
    k = len(synthetic.names)
    if dp:
        rng = np.random.default_rng(seed)
        groups = partition(len(conf), m, rng)
        per = subset_measures(analysis, conf, groups, synthetic, n_coef=len(names))
        noisy, scale = release_means(per, eps, rng)
        measures = pd.DataFrame({meas: noisy[j * k:(j + 1) * k]
                                 for j, meas in enumerate(MEASURES)},
                                index=pd.Index(list(synthetic.names), name="term"))
        sens = 3 * k / m
    else:
        measures = exact_measures(fit_confidential(analysis, conf), synthetic)
        m, sens, scale = None, None, None
    total = store.total(analyst)
    return VerifyResult(
        measures=measures, mode="dp" if dp else "non_private", epsilon=eps, n_subsets=m,
        sensitivity=sens, laplace_scale=scale, analyst=analyst, formula=analysis.formula,
        family=analysis.family, alpha=analysis.alpha, release_json_sha256=rec_sha,
        budget={"total": total, "spent": store.spent(analyst),
                "remaining": store.remaining(analyst)}, reason=reason)
