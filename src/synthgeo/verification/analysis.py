"""The analyst's request: a formula and a family, the allow-list, and the records behind terms.

The formula is checked by the allow-list of the spec's own formulas
(:func:`synthgeo.pipeline.data.check_formula_names`: the released columns and the documented
transforms, no code), its right side may name the released covariates only (a term on the
confidential response would make the check itself disclose it), and every term must rest on at
least ``[anonymity] k`` records (:func:`check_records_behind_terms`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from patsy import EvalEnvironment, dmatrix

from synthgeo._errors import InputError, SpecError
from synthgeo.io.paths import not_a_file
from synthgeo.model.transform import FORMULA_NAMESPACE
from synthgeo.pipeline.data import check_formula_names, formula_names

__all__ = ["FAMILIES", "Analysis", "load_analysis", "check_analysis", "design",
           "check_records_behind_terms"]

#: Families of the analyst's model: OLS, and logistic regression (logit link) on a 0/1 left side.
FAMILIES = ("gaussian", "bernoulli")
_KEY = "the analyst's formula"


@dataclass(frozen=True)
class Analysis:
    """An analyst's model: ``formula`` (patsy), ``family`` and ``alpha`` for (1 − α) intervals.

    ``alpha = None`` takes the release's ``[utility] alpha``.

    Examples
    --------
    >>> Analysis("log_price ~ sqft_living", alpha=0.1)
    Analysis(formula='log_price ~ sqft_living', family='gaussian', alpha=0.1)
    """

    formula: str
    family: str = "gaussian"
    alpha: float | None = None

    def __post_init__(self) -> None:
        """Refuse a formula without one `~`, an unknown family, or alpha outside (0, 1)."""
        if not isinstance(self.formula, str) or self.formula.count("~") != 1:
            raise SpecError(f"{_KEY} {self.formula!r} must be a formula with one `~`, such as "
                            "\"log_price ~ sqft_living\"")
        if self.family not in FAMILIES:
            raise SpecError(f"`family` must be one of {FAMILIES!r}, got {self.family!r}")
        if self.alpha is not None and (isinstance(self.alpha, bool)
                                       or not isinstance(self.alpha, (int, float))
                                       or not 0 < self.alpha < 1):
            raise SpecError(f"`alpha` must be a number in (0, 1), got {self.alpha!r}")


def load_analysis(path: str | os.PathLike) -> Analysis:
    r"""Read an analysis TOML: ``formula`` (required), ``family``, ``alpha``.

    Parameters
    ----------
    path : path
        A TOML file such as ``formula = "log_price ~ sqft_living"`` / ``family = "gaussian"``.

    Returns
    -------
    Analysis

    Raises
    ------
    SpecError
        A missing or unreadable file, an unknown key, or a bad value.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a.toml"
    >>> _ = p.write_text('formula = "log_price ~ sqft_living"\n')
    >>> load_analysis(p).family
    'gaussian'
    """
    path = Path(path)
    if (why := not_a_file(path)) is not None:
        raise SpecError(f"analysis file {str(path)!r} {why}; give a TOML file with "
                        "`formula` (and `family`), or use --formula")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"analysis file {str(path)!r} is not UTF-8 TOML: {exc}") from None
    unknown = sorted(set(raw) - {"formula", "family", "alpha"})
    if unknown:
        raise SpecError(f"unknown key(s) {unknown} in analysis file {str(path)!r}; allowed: "
                        "formula, family, alpha")
    if "formula" not in raw:
        raise SpecError(f"analysis file {str(path)!r} has no `formula`")
    return Analysis(**raw)


def check_analysis(analysis: Analysis, response: str, covariates: list[str]) -> None:
    """Refuse a formula outside the allow-list, or one whose right side names the response.

    Parameters
    ----------
    analysis : Analysis
    response : str
        The released response column (the left side may transform it: ``log(price)``).
    covariates : list of str
        The released covariates: the only columns the right side may name.

    Raises
    ------
    SpecError
        Code (a dunder, quotes, brackets, an unknown name such as ``lambda`` or
        ``__import__``), an attribute access; a left side that is not the response (the
        message names the column and the release's response), or the response on the right
        side.

    Examples
    --------
    >>> check_analysis(Analysis("log_price ~ sqft_living"), "log_price", ["sqft_living"])
    >>> check_analysis(Analysis("log_price ~ os.system(1)"), "log_price", ["sqft_living"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.SpecError: the analyst's formula 'log_price ~ os.system(1)' names ...
    """
    formula = analysis.formula
    lhs, rhs = (formula_names(side, key=_KEY) for side in formula.split("~"))
    other = [n for n in lhs if n != response]
    if other or not lhs:
        said = f"names {', '.join(f'`{n}`' for n in other)}" if other else "names no column"
        raise SpecError(f"{_KEY} {formula!r}: its left side {said}, but the release's response "
                        f"is `{response}`; put `{response}` (or a transform of it, e.g. "
                        f"log({response})) alone on the left")
    if response in rhs:
        raise SpecError(f"{_KEY} {formula!r}: its right side names the release's response "
                        f"`{response}` (confidential); the right side may name the released "
                        f"covariates {list(covariates)} only")
    check_formula_names(formula, [response, *covariates], key=_KEY)


def design(analysis: Analysis, frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Return the model's design matrix (n_records, n_coef) and its term names (patsy).

    Examples
    --------
    >>> X, names = design(Analysis("y ~ x"), pd.DataFrame({"y": [1.0, 2, 3], "x": [0.0, 1, 3]}))
    >>> names, X.shape
    (['Intercept', 'x'], (3, 2))
    """
    rhs = analysis.formula.split("~")[1]
    # evaluated among the documented transforms only (the formula passed check_analysis)
    mat = dmatrix(rhs, frame, eval_env=EvalEnvironment([dict(FORMULA_NAMESPACE)]),
                  NA_action="raise")
    return np.asarray(mat, dtype=float), list(mat.design_info.column_names)


def check_records_behind_terms(X: np.ndarray, names: list[str], k: int) -> None:
    """Refuse a term, or a pair of terms, that singles out fewer than ``k`` records.

    Rules on the design matrix (covariates only: it is public, so the check discloses
    nothing): (1) every column but the intercept has at least ``k`` records whose value differs
    from the column's most common value (``I(sqft == 2143)``, a rare dummy level or an
    interaction with one are refused); (2) so has the difference and the sum of every two
    columns (``I(sqft >= 2143) + I(sqft > 2143)``-style pairs whose difference is one record's
    indicator); (3) no record has leverage h_ii = x_i'(X'X)⁻¹x_i of 1 (to rounding): its
    indicator would lie in the span of the terms, and its response would be fitted exactly.
    Limitation: a group of 2 … k − 1 records isolated by a combination of three or more terms
    is not detected by (1)–(3).

    Parameters
    ----------
    X : ndarray of shape (n_records, n_coef)
    names : list of str of length n_coef
    k : int
        ``[anonymity] k``.

    Raises
    ------
    InputError
        Naming the term (rule 1) or saying that the terms together single out a group
        (rule 2); no count or value of the records is given.

    Examples
    --------
    >>> x = np.arange(20.0)
    >>> X = np.column_stack([np.ones(20), x, (x == 3).astype(float)])
    >>> check_records_behind_terms(X[:, :2], ["Intercept", "x"], 5)
    >>> check_records_behind_terms(X, ["Intercept", "x", "I(x == 3)"], 5)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: term `I(x == 3)` isolates fewer than k = 5 records ...
    """
    for j, name in enumerate(names):
        col = X[:, j]
        if np.ptp(col) == 0:  # the intercept, or a constant term
            if name != "Intercept":
                raise InputError(f"term `{name}` is constant over the records: it cannot be "
                                 "estimated; drop it")
            continue
        if _isolated(col, k):
            raise InputError(f"term `{name}` isolates fewer than k = {k} records (records "
                             "whose value differs from the term's most common value); "
                             "verification needs every term to rest on at least k records: "
                             "drop or coarsen the term")
    for j in range(1, X.shape[1]):
        for i in range(1, j):
            if _isolated(X[:, j] - X[:, i], k) or _isolated(X[:, j] + X[:, i], k):
                raise InputError(f"terms `{names[i]}` and `{names[j]}` together isolate fewer "
                                 f"than k = {k} records (their difference or sum is constant "
                                 "but for them); verification needs every term to rest on at "
                                 "least k records: drop or coarsen one of them")
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise InputError(f"the terms {names} are collinear over the records (the design is not "
                         "of full rank): drop one of them")
    q, _ = np.linalg.qr(X)
    if np.sum(q * q, axis=1).max() > 1.0 - 1e-8:
        raise InputError("the terms together single out one record (its leverage is 1: its "
                         "response would be fitted exactly); verification needs every term to "
                         "rest on at least k records: drop or coarsen the terms")


def _isolated(col: np.ndarray, k: int) -> bool:
    """Whether fewer than ``k`` records differ from the column's most common value."""
    _, counts = np.unique(col, return_counts=True)
    return len(counts) > 1 and len(col) - counts.max() < k
