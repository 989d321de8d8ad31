"""The release attacker scored on a release (:mod:`synthgeo.risk.release_attacker`).

After the per-record risk is scored, the run scores the attacker who reads a record's value off
every record's released implicate means (the neighbour signal) against the same leave-one-out
baseline, per record, for the measure of the board's first target (or the first measure):
its attributable risk at the release's L, and the number of pooled implicates (this release
and every later draw from the same synthesiser) at which each record's would pass the target's
threshold — the *implicate budget*. What is judged and how is in docs/risk-and-utility.md,
"The release attacker".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
import xarray as xr

from synthgeo.inference.quadrature import thread_map
from synthgeo.pipeline.loo_cache import cached_map
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive, kept_predictive, record_slices
from synthgeo.risk.rao_blackwell import rb_risk
from synthgeo.risk.release_attacker import (
    attacker_predictive,
    earlier_response_information,
    implicate_budget,
    mechanism_map,
    release_information,
)
from synthgeo.synthesis.cross_fit import leverage

__all__ = ["ReleaseAttack", "score_release_attacker", "judged_target", "released_map",
           "information_with_mean_noise", "attributable_function", "implicate_variance",
           "later_response_information", "weighted_sum", "accumulate"]

#: Cells of the released map evaluated at once (threads; each holds one (n, n) sparse map).
N_THREADS = 2

#: Above this many pooled implicates the budget is reported as "not reached".
BUDGET_CAP = 100_000


@dataclass(frozen=True)
class ReleaseAttack:
    """The release attacker's figures for one release (aggregates public, per record not).

    Attributes
    ----------
    mechanism : str
        ``"cross_fit"`` (with ``calibration``) or ``"posterior"``.
    calibration : str
    approximate : str or None
        Why the map is an approximation (a restricted posterior predictive), or None.
    measure, attack : str
        The judged measure (e.g. ``"rel:0.1"``) and attack (``"share"`` / ``"average"``).
    threshold : float or None
        The target's ``record_threshold`` (or ``max_attributable_record``) the budget counts.
    n_implicates : int
        L of this release.
    kappa : float
        Input noise sd (model scale); 0 without.
    seconds : float
    attributable : ndarray of shape (n,)
        Release attacker's risk − the baseline's, per record (confidential).
    risk, baseline : ndarray of shape (n,)
        The two risks (confidential).
    budget : ndarray of int, shape (n,)
        The most pooled implicates that keep the record's attributable risk within
        ``threshold`` (:func:`synthgeo.risk.release_attacker.implicate_budget`).
    largest_unlimited : float or None
        Under input noise: the largest attributable risk for any number of pooled implicates
        (the attacker knows y*_i); None without input noise (it tends to 1 - baseline).
    kappa_chosen : {"given", "auto"} or None
    mean_noise_sd : float
        The sd of the noise added to each record's mean, common to its implicates
        (``[synthesis] mean_noise``), model scale; 0 without.
    mean_noise_chosen : {"given", "auto"} or None
    pooled_by_target : callable or None
        ``L -> by_target`` at L pooled implicates (a repeated release: this release's map and
        implicate variances, the earlier release's implicates counted in L).
    judged : bool
        Whether the targets are judged against it: ``[risk] release_attacker = "judge"`` and
        at least one ``[risk.targets]``.
    means_read : tuple of str or None
        Several responses: the responses whose released means the attacker reads (this one
        and every later one, whose design holds this response's values); None for one response.
    by_target : dict of (measure key, attack) to ndarray (n,)
        The attributable risk per record for every ``[risk.targets]`` entry (the verdict's
        ``release_attacker`` input; confidential).
    """

    mechanism: str
    calibration: str
    approximate: str | None
    measure: str
    attack: str
    threshold: float | None
    n_implicates: int
    kappa: float
    seconds: float
    attributable: np.ndarray = field(repr=False)
    risk: np.ndarray = field(repr=False)
    baseline: np.ndarray = field(repr=False)
    budget: np.ndarray = field(repr=False)
    largest_unlimited: float | None = None
    kappa_chosen: str | None = None
    by_target: dict = field(default_factory=dict, repr=False)
    mean_noise_sd: float = 0.0
    mean_noise_chosen: str | None = None
    pooled_by_target: object = field(default=None, repr=False, compare=False)
    judged: bool = False
    means_read: tuple | None = None

    def summary(self) -> dict:
        """Return the aggregates for release.json (no record's value)."""
        a = self.attributable
        out = {"mechanism": self.mechanism, "calibration": self.calibration,
               "approximate": self.approximate, "measure": self.measure,
               "attack": self.attack, "n_implicates": self.n_implicates,
               "input_noise_sd": self.kappa, "input_noise_chosen": self.kappa_chosen,
               "mean_noise_sd": self.mean_noise_sd, "mean_noise_chosen": self.mean_noise_chosen,
               "largest_attributable_any_implicates": self.largest_unlimited,
               "n_records": int(a.size),
               "largest_attributable": float(a.max()), "mean_attributable": float(a.mean()),
               "largest_risk": float(self.risk.max()),
               "largest_baseline": float(self.baseline.max()),
               "threshold": self.threshold, "seconds": round(self.seconds, 3),
               "judged": self.judged}
        if self.means_read is not None:
            out["means_read"] = list(self.means_read)
        if self.threshold is not None:
            out["n_records_above_threshold"] = int((a > self.threshold).sum())
            within = self.budget[self.budget < BUDGET_CAP]
            out["smallest_implicate_budget"] = int(within.min()) if within.size else None
            out["n_records_budget_within_release"] = int(
                (self.budget < self.n_implicates).sum())
        return out

    def per_record(self) -> pd.DataFrame:
        """Per-record columns for the confidential risk file."""
        return pd.DataFrame({"release_attacker_risk": self.risk,
                             "release_attacker_attributable": self.attributable,
                             "release_attacker_implicate_budget": self.budget})

    def line(self) -> str:
        """One console line (aggregates only)."""
        s = self.summary()
        text = (f"release attacker (every record's implicate means, {self.measure} "
                f"{self.attack}): largest attributable {s['largest_attributable']:.3f} at "
                f"L = {self.n_implicates}")
        if self.threshold is not None:
            text += (f"; {s['n_records_above_threshold']} records above {self.threshold:g}; "
                     f"smallest implicate budget {s['smallest_implicate_budget'] or 'not reached'}")
        return text


def released_map(spec, data, fit, released: xr.Dataset, mechanism: str, *,
                 weights: np.ndarray | None = None):
    """Return M̄₀, the released means' derivative in y, averaged over the implicates' cells.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[model]`` (the NNGP's neighbour count) and ``[risk] loo_unit`` (the blocks).
    data : PreparedData
    fit : GPFit
        The fit whose posterior draws made the implicates.
    released : xarray.Dataset
        The implicates, or :func:`synthgeo.synthesis.cross_fit.implicate_sources` (their
        ``source_chain`` / ``source_draw``).
    mechanism : {"cross_fit", "posterior"}
    weights : ndarray of shape (L,), optional
        A weight per implicate: Σ_ℓ weights_ℓ M₀(φ_ℓ, α_ℓ) / L (a later response's
        coefficient b_ℓ of an earlier response: its map in that response's values). Default:
        every weight 1.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)
        Σ_cells (Σ_{ℓ in cell} weights_ℓ / L) M₀(φ, α)
        (:func:`synthgeo.risk.release_attacker.mechanism_map`), dimensionless.
    """
    from synthgeo.pipeline.risk_stage import (  # noqa: PLC0415 (same stage, no cycle)
        posterior_draws,
        precision_function,
        record_blocks,
    )
    blocks = record_blocks(spec, data) if mechanism == "cross_fit" else None
    draws = (released["source_chain"].values, released["source_draw"].values)
    if weights is None and mechanism == "cross_fit":  # input noise built it already
        kept = cached_map(fit, data, draws, blocks)
        if kept is not None:
            return kept
    if "theta_alpha" in released:  # input noise: the y* fit's (φ, α), not ``fit``'s
        phi, alpha = released["theta_phi"].values, released["theta_alpha"].values
    else:
        d = posterior_draws(fit, released)
        phi, alpha = d["phi"], d["nugget"] / d["sigma2"]
    precision_of = precision_function(spec, data, fit)
    w = np.ones(alpha.size) if weights is None else np.asarray(weights, float)
    cells, inverse = np.unique(np.column_stack([phi, alpha]), axis=0, return_inverse=True)
    mass = np.bincount(np.ravel(inverse), weights=w, minlength=len(cells)) / alpha.size

    def part(c: int):
        phi_c, alpha_c = cells[c]
        return (mechanism_map(precision_of(phi_c, alpha_c), alpha_c, mechanism=mechanism,
                              blocks=blocks, consume=True), mass[c])  # Q: this cell's own

    run = thread_map(N_THREADS)

    def parts():  # two cells at a time in threads (compiled and sparse work without the GIL),
        for start in range(0, len(cells), N_THREADS):  # summed in cell order: deterministic
            yield from run(part, list(range(start, min(start + N_THREADS, len(cells)))))

    return weighted_sum(parts())


def weighted_sum(parts):
    """Σ w·part over ``(part, w)`` pairs (dense arrays or sparse matrices), in their order.

    Sparse parts with one stored pattern (the NNGP's cells) are added value by value into the
    first (the same numbers as ``M + w * part``, without a sparse addition's merge and its new
    matrix per cell); others by ``+``.

    Examples
    --------
    >>> weighted_sum([(np.eye(2), 0.5), (np.ones((2, 2)), 0.25)]).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    total = None
    for part, weight in parts:
        total = accumulate(total, part, weight)
    return total


def accumulate(total, part, weight: float):
    """Return ``total + weight · part`` as :func:`weighted_sum` adds it (``total`` None: first).

    The one arithmetic for a cell-weighted map, so that the map input noise keeps
    (:mod:`synthgeo.pipeline.synthesis_noise`) and the one built here are the same numbers.
    """
    if total is None:
        return part * weight
    if _same_pattern(total, part):
        total.data += weight * part.data
        return total
    return total + part * weight


def _same_pattern(a, b) -> bool:
    """Whether two CSR matrices have the same stored positions (dense arrays: never)."""
    return (sp.issparse(a) and sp.issparse(b) and a.format == b.format == "csr"
            and a.nnz == b.nnz and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices))


def information_with_mean_noise(M0, X: np.ndarray, s2: np.ndarray, v_eta: float,
                                n_implicates: int, *, calibration: str) -> np.ndarray:
    r"""I_i when each record's mean carries noise v_η common to its implicates.

    The covariate calibration makes the means' projection on X the confidential OLS fit H y
    (plus implicate noise), which the mean noise does not reach (the calibration projects it
    out): that channel gives L x_iᵀ(XᵀSX)⁻¹x_i, S = diag(s²). The rest, the kriging
    part, is read through noise v_η + s_j²/L: Σ_j M₀_ji² / (v_η + s_j²/L). The two are
    orthogonal projections of the means, so their information adds (docs/risk-and-utility.md,
    "Mean noise").

    Parameters
    ----------
    M0 : scipy sparse matrix (n, n)
    X : ndarray (n, p)
    s2 : ndarray (n,)
        Each record's implicate variance (model scale²).
    v_eta : float
        The mean noise's variance.
    n_implicates : int
        L pooled.
    calibration : str

    Returns
    -------
    ndarray (n,)
    """
    L = float(n_implicates)
    kriging = release_information(M0, X, 1.0 / (v_eta + s2 / L), calibration="none")
    if calibration == "none":
        return kriging
    G = np.linalg.pinv(X.T @ (X * s2[:, None]))
    return kriging + L * np.einsum("ij,jk,ik->i", X, G, X)


def attributable_function(baseline: Predictive, y: np.ndarray, measure: Measure, attack: str,
                          g: str, *, kappa: float = 0.0,
                          ols_information: np.ndarray | float = 0.0):
    """Return the baseline's risk and ``information -> attributable risk`` of the attacker.

    Parameters
    ----------
    baseline : Predictive
        The leave-one-out predictive (L, n), model scale: the attacker's prior.
    y : ndarray of shape (n,)
        The confidential response, model scale.
    measure : Measure
    attack : {"share", "average"}
        "average": the attacker guesses its posterior mean and the baseline its leave-one-out
        mean (point guesses); "share": both draw from their predictive.
    g : {"exp", "identity"}
        Map to the person's scale.
    kappa : float, default=0.0
        Input noise sd (model scale); the returned function's ``noise_sd`` overrides it.
    ols_information : float or ndarray of shape (n,), default=0.0
        h_ii/κ_β², the separate calibration target's information
        (:func:`synthgeo.risk.release_attacker.attacker_predictive`); the returned function's
        ``ols`` overrides it.

    Returns
    -------
    base : ndarray of shape (n,)
        The baseline's Rao-Blackwellised risk.
    attributable_at : callable
        ``information (n,) -> ndarray (n,)``: the attacker's risk − ``base``
        (:func:`synthgeo.risk.release_attacker.attacker_predictive`).

    Examples
    --------
    >>> loo = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3))
    >>> base, f = attributable_function(loo, np.zeros(1), Measure.parse("rel:0.1"),
    ...                                 "share", "exp")
    >>> float(f(np.zeros(1))[0]), bool(f(np.array([50.0]))[0] > 0.1)
    (0.0, True)
    """
    point = attack == "average"
    y = np.asarray(y, float)
    blocks = record_slices(baseline.n_records)  # per record: (L, block) temporaries
    base = np.empty(baseline.n_records)
    for c in blocks:
        part = baseline.columns(c)
        prior = Predictive(mean=part.mean, sd=np.zeros_like(part.sd)) if point else part
        base[c] = rb_risk(prior, y[c], measure, g)

    def attributable_at(info: np.ndarray, *, noise_sd: float | None = None,
                        ols=None) -> np.ndarray:
        k = kappa if noise_sd is None else noise_sd
        extra = ols_information if ols is None else ols
        info = np.broadcast_to(np.asarray(info, float), base.shape)
        extra = np.broadcast_to(np.asarray(extra, float), base.shape)
        out = np.empty(base.shape)
        for c in blocks:
            guess = attacker_predictive(baseline.columns(c), y[c], info[c], kappa=k,
                                        point=point, ols_information=extra[c])
            out[c] = rb_risk(guess, y[c], measure, g)
        out -= base
        return out

    return base, attributable_at


def judged_target(spec) -> tuple[Measure, str, float | None]:
    """Return the judged measure, attack and threshold (the first per-record target)."""
    for t in spec.risk.targets:
        thr = t.record_threshold if t.record_threshold is not None else t.max_attributable_record
        if thr is not None:
            return Measure.parse(t.measure), t.attack, float(thr)
    if spec.risk.targets:
        t = spec.risk.targets[0]
        return Measure.parse(t.measure), t.attack, None
    from synthgeo.pipeline.risk_stage import risk_measures  # noqa: PLC0415 (same stage)
    return risk_measures(spec)[0], "share", None


def implicate_variance(released: xr.Dataset, shift: np.ndarray | None = None) -> np.ndarray:
    """s_j²: the variance of record j's released implicates, less a later response's shift.

    Parameters
    ----------
    released : xarray.Dataset
        ``y_synthetic`` (implicate, record), model scale.
    shift : ndarray of shape (L, n), optional
        A later response of several: (x†_jℓ − x_j)'β_ℓ, the move to the earlier responses'
        synthetic values (:func:`synthgeo.pipeline.responses.shift_to_earlier`), which the
        attacker computes from the release and removes.

    Returns
    -------
    ndarray of shape (n,)
        Model scale², ddof 1.
    """
    y = released["y_synthetic"].transpose("implicate", "record").values
    out = np.empty(y.shape[1])
    for c in record_slices(y.shape[1]):  # (L, block) temporaries, the same values
        out[c] = (y[:, c] if shift is None else y[:, c] - shift[:, c]).var(axis=0, ddof=1)
    return out


def later_response_information(spec, data, fit, released: xr.Dataset, design: np.ndarray,
                               column: int, beta: np.ndarray, s2: np.ndarray,
                               error: np.ndarray | None = None) -> np.ndarray:
    r"""Per implicate: what a later response's released means tell about an earlier response.

    The later response's means, less Σ_e b_e,ℓ y†_e,ℓ, are M z with z = y_k − Σ_e b_e y_e
    (:mod:`synthgeo.risk.release_attacker`, "Several responses"), so their map in the earlier
    response's values is −Σ_ℓ b_ℓ M_ℓ / L, b_ℓ its coefficient in implicate ℓ, plus under a
    calibration the derivative of its projection, whose design holds the earlier values
    (:func:`~synthgeo.risk.release_attacker.earlier_response_information`).

    Parameters
    ----------
    spec : ReleaseSpec
    data : PreparedData
        The later response's (its sites; ``y`` and ``X`` unused).
    fit : GPFit
        The fit whose posterior draws made its released implicates.
    released : xarray.Dataset
        Its released implicates (``attrs``: predictive, calibration, input noise).
    design : ndarray of shape (n, p)
        Its design as the synthesis used it (the calibration's regressors).
    column : int
        The earlier response's column in ``design``.
    beta : ndarray of shape (L, p)
        The coefficients the means and the shift used, per implicate.
    s2 : ndarray of shape (n,)
        Its implicate variances less the shift (:func:`implicate_variance`).
    error : ndarray of shape (n,), optional
        Under a covariate calibration: its target less the mean over implicates of its raw
        leave-out means (the calibration's projection holds the earlier values too:
        :func:`synthgeo.risk.release_attacker.earlier_response_information`).

    Returns
    -------
    ndarray of shape (n,)
        I_i per pooled implicate, in the earlier response's units⁻² (multiply by L).
    """
    cross = released.attrs.get("predictive") == "cross_fit"
    mechanism = "cross_fit" if cross else "posterior"
    calibration = released.attrs.get("calibration", "none") if cross else "none"
    b = np.asarray(beta, float)[:, column]
    M0 = released_map(spec, data, fit, released, mechanism, weights=b)
    if calibration != "none" and error is None:
        raise ValueError("`error` (the mean leave-out error) is needed under a calibration")
    return earlier_response_information(
        M0, design, 1.0 / s2, column=column, eye_weight=float(b.mean()),
        error=np.zeros(s2.size) if error is None else error, calibration=calibration)


def score_release_attacker(spec, data, fits: dict, implicates: dict[str, xr.Dataset],
                           baseline: Predictive, at_risk: np.ndarray, g: str, *,
                           design: np.ndarray | None = None, shift: np.ndarray | None = None,
                           extra_information: np.ndarray | None = None,
                           means_read: tuple | None = None) -> ReleaseAttack:
    """Score the release attacker on the released (``"restricted"``) implicates.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[risk.targets]`` (the measure, attack and threshold), ``[risk] loo_unit``.
    data : PreparedData
    fits : dict of str to GPFit
        The fit whose posterior draws made the released implicates: ``"unrestricted"`` under the
        cross-fit, ``"restricted"`` under the posterior predictive.
    implicates : dict of str to xarray.Dataset
    baseline : Predictive
        The scored leave-one-out baseline (:attr:`RiskScores.baseline`), (L, n), model scale.
    at_risk : ndarray of bool, shape (n,)
        Records whose effect the restricted fit smooths (the map is approximate there).
    g : {"exp", "identity"}
        Map to the person's scale.
    design : ndarray of shape (n, p), optional
        The design the synthesis used (a later response under input noise: the earlier
        responses at their y*); default ``data.X``.
    shift : ndarray of shape (L, n), optional
        A later response of several: the move to the earlier synthetic values, removed from
        the implicate variances (:func:`implicate_variance`).
    extra_information : ndarray of shape (n,), optional
        Several responses: the later responses' information about this one's values, per
        pooled implicate (:func:`later_response_information`, summed), added to its own.
    means_read : tuple of str, optional
        Several responses: the responses whose means the attacker reads (in the summary).

    Returns
    -------
    ReleaseAttack
        Input noise and mean noise are read from the implicates' ``attrs``
        (:mod:`synthgeo.pipeline.synthesis_noise`).
    """
    t0 = time.perf_counter()
    released = implicates["restricted"]
    cross = released.attrs.get("predictive") == "cross_fit"
    mechanism = "cross_fit" if cross else "posterior"
    calibration = released.attrs.get("calibration", "none") if cross else "none"
    fit = fits["unrestricted"] if cross else fits["restricted"]
    approximate = None
    if not cross and np.asarray(at_risk, bool).any():
        approximate = ("the restricted fit's smoothing at the at-risk sites is not in the map: "
                       "the unrestricted smoother I − αQ at the released fit's draws, with the "
                       "at-risk records' own rows left in (an over-statement there)")
    if extra_information is not None:
        approximate = "; ".join(filter(None, [approximate, (
            "the later responses' means are read too, with the record's other responses "
            "taken as known to the attacker (an over-statement where they are not)")]))
    noise = released.attrs.get("input_noise") or {}
    kappa = float(noise.get("sd", 0.0))
    mean_noise = released.attrs.get("mean_noise") or {}
    v_eta = float(mean_noise.get("variance", 0.0))
    M0 = released_map(spec, data, fit, released, mechanism)
    L = released.sizes["implicate"]
    s2 = implicate_variance(released, shift)
    X = data.X if design is None else design
    ols_sd = noise.get("ols_sd")  # input_noise_ols = "separate": the calibration's own noise
    ols_info = leverage(X) / float(ols_sd) ** 2 if ols_sd and calibration != "none" else 0.0
    # without mean noise I_i is L times the information of one implicate: computed once for the
    # budget's grid of L
    per_implicate = (release_information(M0, X, 1.0 / s2, calibration=calibration)
                     if v_eta == 0 else None)
    if extra_information is not None:
        if per_implicate is None:
            raise ValueError("`extra_information` (several responses) with mean noise: "
                             "not derived; the spec refuses mean_noise with several responses")
        per_implicate = per_implicate + np.asarray(extra_information, float)
    # the map is read again only under mean noise: not kept by the result's pooled figures
    # otherwise (a sparse n × n matrix, 0.6 GB at 10⁶ records)
    noisy_map = M0 if per_implicate is None else None
    del M0

    def info_at(n_implicates) -> np.ndarray:
        """I_i with this many pooled implicates (the means' noise: v_η + s²/L)."""
        if per_implicate is not None:
            return per_implicate * n_implicates
        return information_with_mean_noise(noisy_map, X, s2, v_eta, n_implicates,
                                           calibration=calibration)

    y = data.y
    measure, attack, threshold = judged_target(spec)

    def by_target(prior: Predictive, n_implicates: int) -> dict:
        info = info_at(n_implicates)
        return {(m.key, t.attack): attributable_function(prior, y, m, t.attack, g,
                                                         kappa=kappa,
                                                         ols_information=ols_info)[1](info)
                for t in spec.risk.targets for m in (Measure.parse(t.measure),)}

    kept = kept_predictive(baseline)  # for the cumulative risk, later: on disk when large

    def pooled_by_target(n_implicates: int) -> dict:
        return by_target(kept(), n_implicates)

    info_L = info_at(L)
    base, attributable_at = attributable_function(baseline, y, measure, attack, g, kappa=kappa,
                                                  ols_information=ols_info)
    risk = base + attributable_at(info_L)
    unlimited = (float(attributable_at(np.full(y.size, np.inf)).max()) if kappa > 0 else None)
    budget = (implicate_budget(info_at, attributable_at, threshold, max_implicates=BUDGET_CAP)
              if threshold is not None else np.full(y.size, BUDGET_CAP))
    return ReleaseAttack(mechanism=mechanism, calibration=calibration, approximate=approximate,
                         measure=measure.key, attack=attack, threshold=threshold,
                         n_implicates=L, kappa=float(kappa),
                         seconds=time.perf_counter() - t0, attributable=risk - base,
                         risk=risk, baseline=base, budget=budget,
                         largest_unlimited=unlimited, kappa_chosen=noise.get("chosen"),
                         by_target=by_target(baseline, L), mean_noise_sd=float(np.sqrt(v_eta)),
                         mean_noise_chosen=mean_noise.get("chosen"),
                         pooled_by_target=pooled_by_target,
                         judged=spec.risk.release_attacker == "judge" and bool(spec.risk.targets),
                         means_read=None if means_read is None else tuple(means_read))

