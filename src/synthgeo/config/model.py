"""Spec sections ``[model]``, ``[sampling]`` and ``[synthesis]``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from synthgeo._errors import SpecError
from synthgeo.config._common import (
    _POSITIVE_PRIORS,
    _PRIOR_KEYS,
    AT_RISK_RULES,
    AUTO_EXACT_MAX_RECORDS,
    _err,
    _is_int,
    _is_number,
)


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """GP model and differential smoothing.

    ``gp`` {"exact", "nngp", "auto"}: GP representation (auto: exact up to
    ``AUTO_EXACT_MAX_RECORDS`` records, NNGP beyond); ``n_neighbors``: NNGP conditioning-set
    size m (2–50, default 15); ``rho0``: correlation defining M = −log(ρ₀)/φ̂; ``M_m``: fixed M
    in metres
    (skips the rule); ``k``: at risk when fewer than k − 1 neighbours within M (2 = paper);
    ``gamma``: smoothing strength, a number ≥ 0, "inf" (paper's restricted model) or "auto"
    (γ = max(0, σ²/τ² − 1) per posterior draw, grid sampler only); ``at_risk_weight``
    {"binary", "continuous", "pseudo_likelihood"}: a_s ∈ {0, 1} by the rule, or graded
    a = 1 − min(1, ρ_nn/ρ₀) (needs a finite γ), or no smoothing (D = I) and every record's
    likelihood raised to α_i = 1 − r̃_i, its normalised attributable risk under the unrestricted
    fit (Hu, Williams & Savitsky's risk-weighted pseudo-likelihood; needs ``at_risk = "risk"``
    or ``"both"`` for the scores; :mod:`synthgeo.model.pseudo_likelihood`); ``at_risk_effect``
    {"zero", "kriged", "independent"}: the effect
    synthesised at at-risk sites under γ = "inf" (none, or kriged from the other sites; gaussian
    responses); bernoulli / poisson responses always use "independent" (an iid effect of
    variance (1 − d²)σ² drawn afresh; under γ = ∞ without it an isolated high count leaks
    through β₀, docs/model.md), so "zero" (the default) means "independent" for them;
    ``parametrization`` {"natural", "ridge"}; ``priors``: overrides of
    :class:`synthgeo.model.GPPriors` fields;
    ``at_risk`` {"spatial", "risk", "both"}: at-risk records by the spatial rule (the paper),
    by Rao-Blackwellised attributable risk above a ``[risk.targets] record_threshold`` under the
    unrestricted fit, or either (docs/risk-and-utility.md); ``at_risk_nugget`` {"shared",
    "marginal"} (binary weights, γ = "inf", ``at_risk_effect = "zero"`` and the grid sampler
    only): at-risk records share the nugget τ² (the paper), or get variance σ² + τ² in the
    likelihood and are synthesised as x'β + N(0, σ² + τ²) (docs/model.md, "At-risk variance").
    """

    gp: str = "exact"
    n_neighbors: int = 15
    rho0: float = 0.2
    M_m: float | None = None
    k: int = 2
    gamma: float | str = "inf"
    at_risk_weight: str = "binary"
    at_risk_effect: str = "zero"
    parametrization: str = "ridge"
    priors: dict[str, float] = field(default_factory=dict)
    at_risk: Literal["spatial", "risk", "both"] = "spatial"
    at_risk_nugget: Literal["shared", "marginal"] = "shared"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.at_risk not in AT_RISK_RULES:
            raise _err("model", "at_risk", self.at_risk, 'one of "spatial", "risk", "both"')
        if self.at_risk_nugget not in ("shared", "marginal"):
            raise _err("model", "at_risk_nugget", self.at_risk_nugget, '"shared" or "marginal"')
        if self.gp not in ("exact", "nngp", "auto"):
            raise _err("model", "gp", self.gp, 'one of "exact", "nngp", "auto"')
        if not (_is_int(self.n_neighbors) and 2 <= self.n_neighbors <= 50):
            raise _err("model", "n_neighbors", self.n_neighbors, "an integer from 2 to 50")
        if not (_is_number(self.rho0) and 0 < self.rho0 < 1):
            raise _err("model", "rho0", self.rho0, "a number strictly between 0 and 1")
        if self.M_m is not None and not (_is_number(self.M_m) and self.M_m > 0):
            raise _err("model", "M_m", self.M_m, "a positive, finite distance in metres")
        if not (_is_int(self.k) and self.k >= 2):
            raise _err("model", "k", self.k, "an integer >= 2")
        g = self.gamma
        numeric = isinstance(g, (int, float)) and not isinstance(g, bool)
        if not (g in ("inf", "auto") or (numeric and g >= 0 and not math.isnan(g))):
            raise _err("model", "gamma", g, 'a number >= 0, "inf" or "auto"')
        is_inf = g == "inf" or (numeric and math.isinf(g))
        if self.at_risk_weight not in ("binary", "continuous", "pseudo_likelihood"):
            raise _err("model", "at_risk_weight", self.at_risk_weight,
                       'one of "binary", "continuous", "pseudo_likelihood"')
        if self.at_risk_weight == "pseudo_likelihood":
            self._check_pseudo_likelihood()
        if self.at_risk_weight == "continuous" and is_inf:
            raise SpecError(
                '`[model] at_risk_weight = "continuous"` needs a finite `gamma` (a number or '
                '"auto"): with gamma = "inf" every site with a > 0 loses its effect, so the '
                "graded weights collapse to the binary rule"
            )
        if self.at_risk_effect not in ("zero", "kriged", "independent"):
            raise _err("model", "at_risk_effect", self.at_risk_effect,
                       '"zero", "kriged" or "independent"')
        if self.at_risk_effect == "kriged" and not is_inf:
            raise SpecError(
                '`[model] at_risk_effect = "kriged"` replaces the removed effect at at-risk '
                'sites, which only happens with `gamma = "inf"`; with a finite gamma the '
                'at-risk sites keep a (shrunk) effect of their own. Use gamma = "inf" or '
                'at_risk_effect = "zero"'
            )
        if self.at_risk_nugget == "marginal" and not (
                is_inf and self.at_risk_weight == "binary" and self.at_risk_effect == "zero"):
            raise SpecError(
                '`[model] at_risk_nugget = "marginal"` needs binary weights and gamma = "inf" '
                '(at_risk_weight = "binary", gamma = "inf", at_risk_effect = "zero"); use '
                'at_risk_nugget = "shared" otherwise'
            )
        if self.parametrization not in ("natural", "ridge"):
            raise _err("model", "parametrization", self.parametrization, '"natural" or "ridge"')
        if not isinstance(self.priors, dict):
            raise _err("model", "priors", self.priors,
                       f"a table with keys among {sorted(_PRIOR_KEYS)}")
        for key, val in self.priors.items():
            if key not in _PRIOR_KEYS:
                raise SpecError(
                    f"unknown key `[model.priors] {key}`; allowed: {sorted(_PRIOR_KEYS)}"
                )
            if not _is_number(val):
                raise _err("model.priors", key, val, "a finite number")
            if key in _POSITIVE_PRIORS and not val > 0:
                raise _err("model.priors", key, val, "a positive number")
        lo, hi = self.priors.get("range_min_m"), self.priors.get("range_max_m")
        if lo is not None and hi is not None and not lo < hi:
            raise _err("model.priors", "range_min_m", lo,
                       f"smaller than `range_max_m` = {hi!r}")

    def _check_pseudo_likelihood(self) -> None:
        """Refuse the smoothing keys beside ``at_risk_weight = "pseudo_likelihood"``.

        The pseudo-likelihood replaces differential smoothing (D = I): ``gamma`` (its default
        "inf", unused, or 0), ``at_risk_effect`` and ``at_risk_nugget`` must stay at their
        defaults, and the weights
        need the risk rule's scores (``at_risk = "risk"`` or ``"both"``).
        """
        g = self.gamma
        # "inf" (the default, unused here) or 0 (D = I, which the pseudo-likelihood fits)
        gamma_default = g == "inf" or (isinstance(g, (int, float)) and not isinstance(g, bool)
                                       and (math.isinf(g) or g == 0))
        unused = [f"{key} = {val!r}" for key, val, default in (
            ("gamma", "inf" if gamma_default else g, "inf"),
            ("at_risk_effect", self.at_risk_effect, "zero"),
            ("at_risk_nugget", self.at_risk_nugget, "shared")) if val != default]
        if unused:
            raise SpecError(
                f"`[model] {', '.join(unused)}` configure differential smoothing, which "
                '`at_risk_weight = "pseudo_likelihood"` replaces (D = I, each record\'s '
                "likelihood weighted instead); remove them or use another at_risk_weight")
        if self.at_risk == "spatial":
            raise SpecError(
                '`[model] at_risk_weight = "pseudo_likelihood"` weights each record by its '
                "attributable risk under the unrestricted fit, which the risk rule scores; set "
                '`at_risk = "risk"` or `"both"` (with a `[risk.targets] record_threshold`)')

    def engine_for(self, n_records: int) -> str:
        """Return the GP representation for ``n_records`` records ("exact" or "nngp")."""
        if self.gp == "auto":
            return "exact" if n_records <= AUTO_EXACT_MAX_RECORDS else "nngp"
        return self.gp

    @property
    def gamma_value(self) -> float | str:
        """γ as a float (``inf`` for the paper's restricted model) or ``"auto"``."""
        if self.gamma == "auto":
            return "auto"
        return math.inf if self.gamma == "inf" else float(self.gamma)


@dataclass(frozen=True, kw_only=True)
class SamplingConfig:
    """Posterior sampling settings.

    ``sampler`` {"grid", "nutpie"}, default "grid": independent draws from the conjugate grid
    posterior (:mod:`synthgeo.inference.grid`, ``docs/inference.md``; seconds at N = 150 and
    the only route for ``gp = "nngp"``), or NUTS (nutpie) over the collapsed posterior;
    ``backend`` {"numba", "jax"} (NUTS only), ``chains`` (NUTS: >= 2 unless
    ``on_convergence_failure = "warn"``, R-hat compares chains; the grid arranges its
    independent draws in this many groups and has no R-hat, so 1 is allowed), ``draws``
    (per chain) and ``tune`` (NUTS only), ``seed``
    (int; default None: a fresh random seed per run. The seed is a key (with it the noise
    draws can be regenerated and stripped): it is written to ``confidential/seed.txt`` only,
    release.json keeps its SHA-256; give one only where reproducibility is asked for, as the
    bundled example does), ``on_convergence_failure`` {"stop", "warn"}, ``target_accept``
    (NUTS only).
    """

    sampler: str = "grid"
    backend: str = "numba"
    chains: int = 2
    draws: int = 1000
    tune: int = 1000
    seed: int | None = None
    target_accept: float = 0.9
    on_convergence_failure: Literal["stop", "warn"] = "stop"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.sampler not in ("nutpie", "grid"):
            raise _err("sampling", "sampler", self.sampler, '"nutpie" or "grid"')
        if self.backend not in ("numba", "jax"):
            raise _err("sampling", "backend", self.backend, '"numba" or "jax"')
        for key, lo in (("chains", 1), ("draws", 10), ("tune", 10)):
            v = getattr(self, key)
            if not (_is_int(v) and v >= lo):
                raise _err("sampling", key, v, f"an integer >= {lo}")
        if self.seed is not None and not (_is_int(self.seed) and self.seed >= 0):
            raise _err("sampling", "seed", self.seed,
                       "a non-negative integer (or left out: a fresh random seed)")
        if not (_is_number(self.target_accept) and 0.5 <= self.target_accept < 1):
            raise _err("sampling", "target_accept", self.target_accept, "a number in [0.5, 1)")
        if self.on_convergence_failure not in ("stop", "warn"):
            raise _err(
                "sampling", "on_convergence_failure", self.on_convergence_failure,
                '"stop" or "warn"',
            )
        if self.chains < 2 and self.on_convergence_failure == "stop" and self.sampler != "grid":
            raise _err("sampling", "chains", self.chains,
                       ">= 2 when `on_convergence_failure` = \"stop\" (R-hat compares chains); "
                       'use more chains, or "warn" for a preview')


@dataclass(frozen=True, kw_only=True)
class SynthesisConfig:
    """``n_implicates``: L, the number of partially synthetic data sets (Reiter's m).

    ``predictive`` {"posterior", "cross_fit"}, default "posterior": the released implicates are
    drawn from the restricted fit's posterior predictive (the paper), or from the unrestricted
    fit's cross-fitted predictive, each record given every response outside its leave-out
    block (its site, and its subject) at the implicate's posterior draw: every record is
    treated, no restricted model is fitted (:mod:`synthgeo.synthesis.cross_fit`;
    docs/risk-and-utility.md, "Cross-fitted synthesis").

    ``cross_fit_calibration`` {"covariates", "none"}, default "covariates": under
    ``predictive = "cross_fit"``, each implicate's cross-fitted means are shifted by the
    projection of their leave-out errors onto the covariates, so that the implicate's OLS on
    the covariates equals the confidential one in expectation
    (:func:`synthgeo.synthesis.cross_fit.calibrate_covariates`; docs/risk-and-utility.md,
    "Calibrated cross-fit"); "covariates_loo" fits each record's shift without its own
    leave-out error (a smaller own-value weight, an O(p/n) inexact match); "none" leaves it
    raw. Refused beside ``predictive = "posterior"`` unless left at its default.

    ``input_noise`` (float ≥ 0 or "auto", default 0: none): under ``predictive = "cross_fit"``
    the synthesis reads y* = y + e, e ~ N(0, κ²) drawn once from the release's seed, with κ in
    the response's model scale (log-dollars for a log response); "auto" takes the smallest κ
    at which the release attacker's attributable risk stays within the first per-record
    target for **any** number of pooled implicates (:mod:`synthgeo.synthesis.input_noise`;
    docs/risk-and-utility.md, "The release attacker"). With ``[[data.responses]]`` (gaussian
    only) every response draws its own e: a number is the sd of each, in its own model scale;
    "auto" chooses each response's κ for its own release attacker.

    ``mean_noise`` (float ≥ 0 or "auto", default 0: none): under ``predictive = "cross_fit"``
    each record's mean is moved by η_j ~ N(0, sd²), drawn once and common to its implicates,
    before the covariate calibration (sd in the model scale); "auto" takes the smallest sd at
    which the release attacker at this release's L stays within the first per-record target
    (:mod:`synthgeo.synthesis.mean_noise`; docs/risk-and-utility.md, "Mean noise"). Not with
    ``input_noise``.

    ``input_noise_ols`` {"auto", "separate", "shared"}, default "auto": under ``input_noise``
    the covariate calibration's target. "separate": the OLS of t = y + e_β with noise of its
    own, e_β ~ N(0, κ_β²), κ_β = κ (max_i h_ii)^½ (h the covariates' leverage): that
    channel tells no record more than y* tells it, and moves the released regression by
    κ_β/κ as little as y*'s would (needs ``cross_fit_calibration = "covariates"`` or
    "none"); "shared": the OLS of y* itself; "auto": "separate" where max h ≤ 1/16
    (κ_β ≤ κ/4) and the calibration allows it, else "shared"
    (:mod:`synthgeo.synthesis.input_noise`; docs/risk-and-utility.md, "Input noise").

    ``input_noise_draws`` {"y", "y_star"}, default "y": under ``input_noise`` what each
    implicate is, over the noise. "y": y's leave-out predictive (the implicate variance is the
    leave-out variance less the noise's own variance in the mean); "y_star": y*'s, the same
    plus κ² (noise infusion: the synthetic values are draws of a noised response; wider, so
    that an over-confident fit of y* cannot concentrate them on a record's value)
    (docs/risk-and-utility.md, "Input noise: what an implicate is").
    """

    n_implicates: int = 100
    predictive: Literal["posterior", "cross_fit"] = "posterior"
    cross_fit_calibration: Literal["covariates", "covariates_loo", "none"] = "covariates"
    input_noise: float | str = 0.0
    mean_noise: float | str = 0.0
    input_noise_ols: Literal["auto", "separate", "shared"] = "auto"
    input_noise_draws: Literal["y", "y_star"] = "y"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if not (_is_int(self.n_implicates) and self.n_implicates >= 2):
            raise _err("synthesis", "n_implicates", self.n_implicates, "an integer >= 2")
        if self.predictive not in ("posterior", "cross_fit"):
            raise _err("synthesis", "predictive", self.predictive,
                       '"posterior" or "cross_fit"')
        if self.cross_fit_calibration not in ("covariates", "covariates_loo", "none"):
            raise _err("synthesis", "cross_fit_calibration", self.cross_fit_calibration,
                       '"covariates", "covariates_loo" or "none"')
        for key in ("input_noise", "mean_noise"):
            noise = getattr(self, key)
            if not (noise == "auto" or (isinstance(noise, (int, float))
                                        and not isinstance(noise, bool)
                                        and math.isfinite(noise) and noise >= 0)):
                raise _err("synthesis", key, noise,
                           'a number >= 0 (an sd, model scale, e.g. log-dollars) or "auto"')
        for key in ("input_noise", "mean_noise"):
            noise = getattr(self, key)
            if noise != "auto" and 0 < noise < 1e-6:
                raise _err("synthesis", key, noise,
                           "0 (none), an sd of at least 1e-6 (model scale) or \"auto\"")
        if self.input_noise != 0 and self.mean_noise != 0:
            raise SpecError("`[synthesis] input_noise` and `mean_noise` are two ways to bound "
                            "the release attacker; give one of them")
        if self.input_noise_ols not in ("auto", "separate", "shared"):
            raise _err("synthesis", "input_noise_ols", self.input_noise_ols,
                       '"auto", "separate" or "shared"')
        if self.input_noise_draws not in ("y", "y_star"):
            raise _err("synthesis", "input_noise_draws", self.input_noise_draws,
                       '"y" or "y_star"')
        if self.input_noise_draws == "y_star" and self.input_noise == 0:
            raise SpecError(  # break-it finding: it passed and did nothing
                '`[synthesis] input_noise_draws = "y_star"` draws implicates of the noised '
                "response, but `input_noise = 0` adds no noise: give input_noise (an sd or "
                '"auto"), or leave input_noise_draws out')
        if (self.input_noise != 0 and self.input_noise_ols == "separate"
                and self.cross_fit_calibration == "covariates_loo"):
            raise SpecError(
                '`[synthesis] input_noise_ols = "separate"` with `cross_fit_calibration = '
                '"covariates_loo"`: the leave-own-out shift is a full-rank map of the OLS '
                "target, which as implicates are pooled publishes each record's t_i, noised only "
                'by the small e_β; use cross_fit_calibration = "covariates", or '
                'input_noise_ols = "shared"')


