"""The whole release spec, its sections, and reading it from a TOML file."""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from synthgeo._errors import SpecError
from synthgeo.config._common import BUNDLED_SPEC, _build
from synthgeo.config.anonymity import AnonymityConfig, ComputeConfig
from synthgeo.config.data import DataConfig
from synthgeo.config.model import (
    ModelConfig,
    SamplingConfig,
    SynthesisConfig,
)
from synthgeo.config.risk import RiskConfig, UtilityConfig
from synthgeo.io.paths import not_a_file, resolve_input


@dataclass(frozen=True, kw_only=True)
class ReleaseSpec:
    """A whole release spec. ``source`` is the spec file (paths resolve against its folder)."""

    data: DataConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    synthesis: SynthesisConfig = field(default_factory=SynthesisConfig)
    risk: RiskConfig = field(default_factory=RiskConfig)
    utility: UtilityConfig = field(default_factory=UtilityConfig)
    anonymity: AnonymityConfig = field(default_factory=AnonymityConfig)
    compute: ComputeConfig = field(default_factory=ComputeConfig)
    source: Path | None = None

    def __post_init__(self) -> None:
        """Refuse combinations of sections that cannot work together."""
        families = {r.family for r in self.data.response_configs}
        if self.model.gamma == "auto" and "bernoulli" in families:
            raise SpecError(
                '`[model] gamma = "auto"` (gamma = max(0, sigma2/tau2 - 1)) needs a nugget, and '
                'a bernoulli response has none: use a number or "inf"')
        if self.model.at_risk_effect == "independent" and "gaussian" in families:
            raise SpecError(
                '`[model] at_risk_effect = "independent"` applies to bernoulli / poisson '
                'responses only; use "zero" or "kriged" with a gaussian response')
        if self.model.at_risk_effect == "kriged" and families - {"gaussian"}:
            raise SpecError(
                '`[model] at_risk_effect = "kriged"` applies to gaussian responses only; '
                'bernoulli / poisson responses use "independent" (the default for them)')
        if self.data.sequential and self.sampling.sampler != "grid":
            raise SpecError(
                'spec `[[data.responses]]` (several responses or a bernoulli / poisson one) '
                'needs `[sampling] sampler = "grid"`')
        self._check_discrete_responses()
        if self.model.gamma == "auto" and self.sampling.sampler != "grid":
            raise SpecError(
                '`[model] gamma = "auto"` (gamma = max(0, sigma2/tau2 - 1) per draw) needs '
                '`[sampling] sampler = "grid"`, where it enters every grid cell exactly'
            )
        if self.model.at_risk != "spatial" and not any(
                t.record_threshold is not None for t in self.risk.targets):
            raise SpecError(
                f'`[model] at_risk = "{self.model.at_risk}"` needs a `[risk.targets] '
                "record_threshold` (records whose attributable risk under the unrestricted fit "
                'exceeds it become at risk); add one or use at_risk = "spatial"'
            )
        if self.model.at_risk_nugget == "marginal" and self.sampling.sampler != "grid":
            raise SpecError(
                '`[model] at_risk_nugget = "marginal"` needs `[sampling] sampler = "grid"` (the '
                'NUTS model has one nugget for every record); use sampler = "grid" or '
                'at_risk_nugget = "shared"'
            )
        if self.model.at_risk_weight == "pseudo_likelihood" and (
                self.sampling.sampler != "grid" or self.data.sequential):
            raise SpecError(
                '`[model] at_risk_weight = "pseudo_likelihood"` needs `[sampling] sampler = '
                '"grid"` (the NUTS model has one nugget for every record) and one gaussian '
                "response (not yet `[[data.responses]]`); change these or use another "
                "at_risk_weight")
        if self.risk.loo_unit == "subject" and not self.data.subject:
            raise SpecError(
                '`[risk] loo_unit = "subject"` needs a `[data] subject` column (the records of '
                'one subject, left out together); name it, or use loo_unit = "site" or "record"'
            )
        discrete = next((r for r in self.data.response_configs if r.family != "gaussian"),
                        None)
        if self.synthesis.input_noise != 0 and discrete is not None:
            what = {"bernoulli": "yes/no", "poisson": "count"}[discrete.family]
            raise SpecError(
                f"`[synthesis] input_noise` with the {what} response `{discrete.name}`: the "
                "noise is added to a gaussian response and synthesised through the GP's "
                "closed-form leave-out predictive, which the spatial GLMM does not have (each "
                "left-out record would need its own Laplace fit), and a 0/1 value or a count "
                f"plus normal noise is no longer one; release `{discrete.name}` in a release "
                "of its own, or leave input_noise out")
        if self.synthesis.predictive == "cross_fit":
            self._check_cross_fit()
        elif self.synthesis.input_noise != 0 or self.synthesis.mean_noise != 0:
            key = "input_noise" if self.synthesis.input_noise != 0 else "mean_noise"
            raise SpecError(
                f'`[synthesis] {key}` applies to the cross-fitted predictive only; remove '
                'it or set `[synthesis] predictive = "cross_fit"`')
        elif self.synthesis.cross_fit_calibration != "covariates":
            raise SpecError(
                f'`[synthesis] cross_fit_calibration = "{self.synthesis.cross_fit_calibration}"` '
                'applies to the cross-fitted predictive only; remove it or set '
                '`[synthesis] predictive = "cross_fit"`')
        if self.synthesis.mean_noise != 0 and self.data.sequential:
            raise SpecError(
                "`[synthesis] mean_noise` applies to one gaussian response: with "
                "`[[data.responses]]` a later response's covariate calibration projects on a "
                "design that holds the earlier confidential responses, a channel the mean "
                "noise does not reach and whose information is not derived; use "
                '`input_noise` (its bound holds for every response) or release one response')
        if self.synthesis.input_noise == "auto" and any(
                t.attack == "average" for t in self.risk.targets):
            raise SpecError(
                '`[synthesis] input_noise = "auto"` chooses the noise for a "share" target: '
                'against the average attack (a point guess) the bound does not fall steadily '
                'with the noise; give input_noise a number, or use attack = "share"')
        auto = next((k for k in ("input_noise", "mean_noise")
                     if getattr(self.synthesis, k) == "auto"), None)
        if auto and not any(
                t.record_threshold is not None or t.max_attributable_record is not None
                for t in self.risk.targets):
            raise SpecError(
                f'`[synthesis] {auto} = "auto"` chooses the noise for the first per-record '
                'target, and none is set: add a `[risk.targets]` table with '
                f'`max_attributable_record` or `record_threshold`, or give {auto} a number')
        if self.risk.protect == "targets" and not self.risk.targets:
            raise SpecError(
                '`[risk] protect = "targets"` seeks the board\'s targets, and none is set: add '
                'a `[risk.targets]` table, or use protect = "none"')
        if (self.synthesis.predictive == "cross_fit" and self.risk.loo_posterior == "full"
                and self.risk.targets and self.risk.protect != "targets"):
            raise SpecError(
                '`[risk.targets]` with `[synthesis] predictive = "cross_fit"` and `[risk] '
                'loo_posterior = "full"`: against the full posterior\'s baseline a cross-fit\'s '
                "attributable risk is 0 (raw) or its calibration shift by construction, so a "
                'PASS would prove nothing; remove loo_posterior (default "reweighted")')
        if self.risk.protect != "targets" and self.risk.max_rounds != 4:
            raise SpecError(
                f"`[risk] max_rounds = {self.risk.max_rounds}` caps the rounds of "
                '`protect = "targets"`, which is not set; set protect = "targets" or remove '
                "max_rounds")
        if self.risk.protect == "targets" and self.risk.loo_posterior == "full":
            raise SpecError(
                '`[risk] protect = "targets"` with `loo_posterior = "full"`: against the full '
                "posterior's baseline a cross-fitted round's attributable risk is 0 by "
                'construction, so its PASS would prove nothing; remove loo_posterior (default '
                '"reweighted")')
        self._check_draws()
        if self.model.gp == "nngp" and self.sampling.sampler != "grid":
            raise SpecError(
                'spec `[model] gp = "nngp"` needs `[sampling] sampler = "grid"`: NUTS over the '
                "NNGP likelihood needs thousands of gradient evaluations (~0.1 s each at 25,000 "
                "records), the grid a few hundred evaluations without gradients"
            )

    def _check_draws(self) -> None:
        """Refuse more implicates than the posterior draws the spec retains.

        Each implicate is drawn at its own retained posterior draw (``chains`` × ``draws``;
        :func:`synthgeo.synthesis.implicates.implicate_draw_index`), and ``at_risk = "risk"`` or
        ``"both"`` selects records on L draws disjoint from the implicates' L (fresh draws for
        judgement, :func:`~synthgeo.synthesis.implicates.selection_draw_index`): 2L in all.
        Refused here so that ``synthgeo validate`` says so, not ``run`` after the first fit
        (break-it trial 2026-12-07).
        """
        s, n = self.sampling, self.synthesis.n_implicates
        retained = s.chains * s.draws
        where = f"`[sampling] chains` × `draws` = {s.chains} × {s.draws} = {retained}"
        if n > retained:
            raise SpecError(
                f"`[synthesis] n_implicates` = {n} needs as many posterior draws (one per "
                f"implicate) and {where} are retained; raise `draws` to at least "
                f"{-(-n // s.chains)} or lower n_implicates to at most {retained}")
        if self.model.at_risk != "spatial" and 2 * n > retained:
            raise SpecError(
                f'`[model] at_risk = "{self.model.at_risk}"` selects records on {n} posterior '
                f"draws and judges the release on {n} others (`[synthesis] n_implicates` = "
                f"{n}): {2 * n} are needed and {where} are retained; raise `draws` to at least "
                f"{-(-2 * n // s.chains)} or lower n_implicates to at most {retained // 2}")

    def _check_discrete_responses(self) -> None:
        """Refuse the keys that have no meaning for a yes/no or count response (statistical).

        ``[risk.targets]`` (and so ``at_risk = "risk" | "both"``, which needs one) bound the
        attributable risk of a within-tolerance match against the gaussian GP's closed-form
        leave-one-out predictive; ``at_risk_nugget = "marginal"`` moves a gaussian nugget.
        docs/risk-and-utility.md, "Discrete responses and several responses".
        """
        discrete = next((r for r in self.data.response_configs if r.family != "gaussian"),
                        None)
        if discrete is None:
            return
        what = {"bernoulli": "yes/no", "poisson": "count"}[discrete.family]
        if self.risk.targets:
            raise SpecError(
                f"`[risk.targets]` with the {what} response `{discrete.name}`: the targets "
                "bound the attributable risk of a within-tolerance match (eps, p) against the "
                "gaussian GP's closed-form leave-one-out predictive; a "
                f"{what} value is disclosed by an exact match, whose baseline is the public GLM "
                "(the spatial GLMM's leave-one-out predictive has no closed form), so a limit "
                "set on the one is no limit on the other; remove `[risk.targets]` or release "
                f"`{discrete.name}` in a release of its own (docs/risk-and-utility.md)")
        if self.model.at_risk_nugget == "marginal":
            raise SpecError(
                f'`[model] at_risk_nugget = "marginal"` with the {what} response '
                f"`{discrete.name}`: it gives an at-risk record the variance sigma2 + tau2 of a "
                f"gaussian response with a nugget tau2; a {what} response has no nugget (its "
                "variance follows from its mean) and its at-risk sites already get an "
                'independent spatial effect; use at_risk_nugget = "shared" or release '
                f"`{discrete.name}` in a release of its own (docs/risk-and-utility.md)")

    def _check_cross_fit(self) -> None:
        """Refuse keys of the restricted model, which ``predictive = "cross_fit"`` does not fit."""
        m = self.model
        discrete = next((r for r in self.data.response_configs if r.family != "gaussian"),
                        None)
        if discrete is not None:
            what = {"bernoulli": "yes/no", "poisson": "count"}[discrete.family]
            raise SpecError(
                f'`[synthesis] predictive = "cross_fit"` with the {what} response '
                f"`{discrete.name}`: the cross-fitted predictive is the gaussian GP's "
                "closed-form leave-out conditional, and the spatial GLMM's has no closed form "
                "(each left-out record would need its own Laplace fit); use predictive = "
                f'"posterior" or release `{discrete.name}` in a release of its own')
        unused = [f"{key} = {getattr(m, key)!r}" for key, default in (
            ("gamma_value", math.inf), ("at_risk", "spatial"), ("at_risk_weight", "binary"),
            ("at_risk_effect", "zero"), ("at_risk_nugget", "shared"))
            if getattr(m, key) != default]
        unused = [u.replace("gamma_value", "gamma") for u in unused]
        if unused:
            raise SpecError(
                f"`[model] {', '.join(unused)}` configure the restricted fit, which "
                '`[synthesis] predictive = "cross_fit"` does not make (every record is drawn '
                "from the unrestricted fit's cross-fitted predictive); remove them or use "
                'predictive = "posterior"')

    @property
    def loo_unit(self) -> str:
        """The leave-out unit as run: ``[risk] loo_unit``, or its default.

        The default is "subject" with a ``[data] subject`` column, else "site"
        (:func:`synthgeo.risk.loo.leave_out_blocks`).
        """
        if self.risk.loo_unit is not None:
            return self.risk.loo_unit
        return "subject" if self.data.subject else "site"

    @property
    def loo_posterior(self) -> str:
        """The baseline's parameter draws as run: ``[risk] loo_posterior``, or its default.

        The default is "reweighted": the baseline attacker's parameters fitted without the
        record (:mod:`synthgeo.risk.loo_posterior`); "full" keeps the earlier baseline at the
        full posterior's draws, which lends it the record's value through θ.
        """
        return self.risk.loo_posterior or "reweighted"

    @property
    def formula(self) -> str:
        """Analyst's formula; default ``response ~ covariate + ...``."""
        if self.utility.formula:
            return self.utility.formula
        rhs = " + ".join(self.data.covariates) or "1"
        lhs = self.data.response
        if self.data.response_transform == "log":  # the released column is on the original scale
            lhs = f"log({lhs})"
        return f"{lhs} ~ {rhs}"

    def data_path(self) -> Path | None:
        """Return the resolved path of the points file (None for records given in memory)."""
        if self.data.path is None:
            return None
        return resolve_input(self.data.path,
                             relative_to=None if self.source is None else self.source.parent)

    def study_area(self) -> list[float] | str | None:
        """Return ``[data] study_area`` with a file path resolved relative to the spec."""
        area = self.data.study_area
        if not isinstance(area, str) or self.source is None or Path(area).is_absolute() \
                or "," in area:
            return area
        return str(self.source.parent / area)

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as run, every default filled in (JSON-serialisable)."""
        out = {
            f.name: dataclasses.asdict(getattr(self, f.name))
            for f in dataclasses.fields(self) if f.name != "source"
        }
        out["source"] = str(self.source) if self.source else None
        out["risk"]["loo_unit"] = self.loo_unit  # its default depends on [data] subject
        out["risk"]["loo_posterior"] = self.loo_posterior  # ... and on [synthesis] predictive
        return out

    def replace(self, section: str, **changes: Any) -> ReleaseSpec:
        """Copy with some keys of one section changed (validated again)."""
        if section not in _SECTIONS:
            raise SpecError(f"unknown spec section {section!r}; allowed: {sorted(_SECTIONS)}")
        cls = type(getattr(self, section))
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SpecError(f"unknown key(s) in `[{section}]`: {unknown}")
        new = dataclasses.replace(getattr(self, section), **changes)
        return dataclasses.replace(self, **{section: new})


_SECTIONS = {
    "data": DataConfig, "model": ModelConfig, "sampling": SamplingConfig,
    "synthesis": SynthesisConfig, "risk": RiskConfig, "utility": UtilityConfig,
    "anonymity": AnonymityConfig, "compute": ComputeConfig,
}


def load_spec(path: str | Path) -> ReleaseSpec:
    """Read and validate a release spec.

    Parameters
    ----------
    path : str or Path
        TOML file.

    Returns
    -------
    ReleaseSpec

    Raises
    ------
    SpecError
        If the file is missing, not UTF-8 or not TOML (a UTF-8 byte-order mark is allowed), a
        section or key is unknown, a required key is missing, or a value is impossible (each
        message names the key and the valid values).
    """
    path = Path(path)
    if (why := not_a_file(path)) is not None:
        raise SpecError(f"spec file {str(path)!r} {why}"
                        + ("" if why == "does not exist" else "; give the TOML file itself"))
    try:  # utf-8-sig: a byte-order mark (Windows editors) is not part of the TOML
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"spec file {str(path)!r} is not UTF-8 text (byte "
                        f"{exc.object[exc.start]:#04x} at position {exc.start}): save it as "
                        "UTF-8, as TOML requires") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec file {str(path)!r} is not valid TOML: {exc}") from exc
    unknown = sorted(set(raw) - set(_SECTIONS))
    if unknown:
        raise SpecError(f"unknown spec section(s) {unknown}; allowed: {sorted(_SECTIONS)}")
    if "data" not in raw:
        raise SpecError("spec has no `[data]` section (path, response, covariates, ...)")
    parts = {name: _build(name, cls, raw.get(name, {})) for name, cls in _SECTIONS.items()}
    return ReleaseSpec(**parts, source=path.resolve())


def spec_from_dict(record: dict[str, Any]) -> ReleaseSpec:
    """Rebuild a spec from :meth:`ReleaseSpec.to_dict` (release.json's ``spec``, as run).

    Parameters
    ----------
    record : dict
        Sections as written by ``to_dict``; a key whose value is null is left at its default
        (``to_dict`` writes every key, the spec's checks refuse some pairs given together).

    Returns
    -------
    ReleaseSpec
        Validated as a TOML spec is; ``source`` is the spec file the release was run from.

    Raises
    ------
    SpecError
        For an unknown section or key, or an impossible value.

    Examples
    --------
    >>> spec = load_spec(bundled_spec_path())
    >>> spec_from_dict(spec.to_dict()).to_dict() == spec.to_dict()
    True
    """
    record = dict(record)
    source = record.pop("source", None)
    unknown = sorted(set(record) - set(_SECTIONS))
    if unknown:
        raise SpecError(f"unknown spec section(s) {unknown}; allowed: {sorted(_SECTIONS)}")
    parts = {name: _build(name, cls, {k: v for k, v in (record.get(name) or {}).items()
                                      if v is not None})
             for name, cls in _SECTIONS.items()}
    return ReleaseSpec(**parts, source=None if source is None else Path(source))


def bundled_spec_path() -> Path:
    """Path of the example spec shipped inside the package (Sacramento two-bedroom sales)."""
    return Path(str(resources.files("synthgeo") / "data" / BUNDLED_SPEC))


def bundled_tour_spec_text() -> str:
    """Return the bundled spec's text with its commented protect line and targets uncommented.

    README's tour step 2: what a user gets by uncommenting the block in a copy of the spec
    (the tests and the report screenshots run it).

    Returns
    -------
    str
        TOML text; the ``# protect = "targets"`` line and the ``# [risk.targets]`` table's
        lines made live, every other comment kept.

    Examples
    --------
    >>> from synthgeo.config import load_spec
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tour.toml"
    >>> _ = path.write_text(bundled_tour_spec_text(), encoding="utf-8")
    >>> load_spec(path).risk.protect
    'targets'

    """
    text = bundled_spec_path().read_text(encoding="utf-8")
    block = text[text.index('# protect = "targets"\n'):text.index("\n[utility]")]
    lines = [ln[2:] for ln in block.splitlines() if ln.startswith("# ")
             and ("=" in ln or ln.startswith("# [risk.targets]"))]
    return text.replace(block, "\n".join(lines))
