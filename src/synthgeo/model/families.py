"""Response families beyond the Gaussian: Bernoulli (logit link) and Poisson (log link).

A family gives, for a linear predictor η (one value per record), the log-likelihood of the
observed responses and its first two derivatives in η. Both likelihoods factorise over records,
so the Hessian in η is diagonal; both are log-concave in η, which is what makes Newton's method
for the Laplace approximation (:mod:`synthgeo.inference.laplace`) converge from any start.

Bernoulli, y ∈ {0, 1}, p = expit(η)::

    log p(y | η) = y η − log(1 + e^η)
    ∂/∂η = y − p,     ∂²/∂η² = −p (1 − p)

Poisson, y ∈ {0, 1, 2, …}, exposure E > 0 (offset log E), μ = E e^η::

    log p(y | η) = y (η + log E) − μ − log y!
    ∂/∂η = y − μ,     ∂²/∂η² = −μ

Overdispersion for the Poisson is not a different likelihood here: it is an extra iid Gaussian
term ε_i ~ N(0, τ²) on η (a nugget on the log scale, the Poisson–lognormal model), carried by
the latent field of the inference. Sources: McCullagh & Nelder (1989), *Generalized Linear
Models*, 2nd ed., Ch. 4 and 6; Rue, Martino & Chopin (2009, JRSS-B 71(2),
doi:10.1111/j.1467-9868.2008.00700.x) for the latent Gaussian form. Method page:
``docs/model.md`` ("Families beyond Gaussian").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln, log_expit

__all__ = ["Family", "Bernoulli", "Poisson", "get_family", "FAMILIES"]


def _as_float(a, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"`{name}` holds NaN or infinite values")
    return a


@dataclass(frozen=True, kw_only=True)
class Family:
    """Base of the response families (a name and the derivatives of log p(y | η))."""

    name: str = ""

    def check(self, y: np.ndarray, exposure: np.ndarray | None = None) -> np.ndarray:
        """Validate responses (and exposure); return them as floats. Raises ValueError."""
        raise NotImplementedError

    def loglik(self, y, eta, offset=0.0) -> np.ndarray:
        """Per-record log-likelihood log p(y_i | η_i), shape of ``y``."""
        raise NotImplementedError

    def derivatives(self, y, eta, offset=0.0) -> tuple[np.ndarray, np.ndarray]:
        """Per-record (∂/∂η, ∂²/∂η²) of the log-likelihood, each of the shape of ``y``."""
        raise NotImplementedError

    def sample(self, eta, rng: np.random.Generator, offset=0.0) -> np.ndarray:
        """Draw responses at linear predictor ``eta`` (any shape)."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Bernoulli(Family):
    """Yes/no responses with the logit link, p = expit(η).

    Examples
    --------
    >>> import numpy as np
    >>> fam = Bernoulli()
    >>> y, eta = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    >>> np.round(fam.loglik(y, eta), 4)
    array([-0.6931, -2.1269])
    >>> g, h = fam.derivatives(y, eta)
    >>> np.round(g, 4), np.round(h, 4)
    (array([ 0.5   , -0.8808]), array([-0.25 , -0.105]))
    """

    name: str = "bernoulli"

    def check(self, y, exposure=None) -> np.ndarray:
        """Responses must be 0 or 1; a Bernoulli has no exposure.

        Raises
        ------
        ValueError
            If a value is not 0/1 or ``exposure`` is given.
        """
        y = _as_float(y, "y")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("bernoulli responses must be 0 or 1; name the event level with "
                             "`positive` to code a yes/no column")
        if exposure is not None:
            raise ValueError("`exposure` applies to the poisson family only")
        return y

    def loglik(self, y, eta, offset=0.0) -> np.ndarray:
        """``y η − log(1 + e^η)`` computed stably (``offset`` is added to η)."""
        e = np.asarray(eta, float) + offset
        return y * log_expit(e) + (1.0 - y) * log_expit(-e)

    def derivatives(self, y, eta, offset=0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(y − p, −p(1 − p))`` with p = expit(η + offset)."""
        p = expit(np.asarray(eta, float) + offset)
        return y - p, -p * (1.0 - p)

    def sample(self, eta, rng, offset=0.0) -> np.ndarray:
        """Draw 0/1 with probability expit(η + offset), as int8."""
        p = expit(np.asarray(eta, float) + offset)
        return (rng.random(p.shape) < p).astype(np.int8)


@dataclass(frozen=True, kw_only=True)
class Poisson(Family):
    """Counts with the log link and an exposure offset, μ = E e^η.

    Examples
    --------
    >>> import numpy as np
    >>> fam = Poisson()
    >>> y, eta, off = np.array([0.0, 3.0]), np.array([0.0, 1.0]), np.log([1.0, 2.0])
    >>> np.round(fam.loglik(y, eta, off), 4)
    array([-1.    , -2.1489])
    >>> g, h = fam.derivatives(y, eta, off)
    >>> np.round(g, 4), np.round(h, 4)
    (array([-1.    , -2.4366]), array([-1.    , -5.4366]))
    """

    name: str = "poisson"

    def check(self, y, exposure=None) -> np.ndarray:
        """Responses must be non-negative integers; exposure (if given) positive and finite.

        Raises
        ------
        ValueError
            If a count is negative or not whole, or an exposure is ≤ 0.
        """
        y = _as_float(y, "y")
        if np.any(y < 0) or np.any(y != np.round(y)):
            raise ValueError("poisson responses must be non-negative whole numbers")
        if exposure is not None:
            e = _as_float(exposure, "exposure")
            if e.shape != y.shape or np.any(e <= 0):
                raise ValueError("`exposure` must be positive, one value per record")
        return y

    def loglik(self, y, eta, offset=0.0) -> np.ndarray:
        """``y (η + offset) − e^(η + offset) − log y!``."""
        e = np.asarray(eta, float) + offset
        return y * e - np.exp(e) - gammaln(y + 1.0)

    def derivatives(self, y, eta, offset=0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(y − μ, −μ)`` with μ = exp(η + offset)."""
        mu = np.exp(np.asarray(eta, float) + offset)
        return y - mu, -mu

    def sample(self, eta, rng, offset=0.0) -> np.ndarray:
        """Draw counts ~ Poisson(exp(η + offset)), as int64."""
        return rng.poisson(np.exp(np.asarray(eta, float) + offset)).astype(np.int64)


#: Families by spec name.
FAMILIES: dict[str, type[Family]] = {"bernoulli": Bernoulli, "poisson": Poisson}


def get_family(name: str) -> Family:
    """Return the family called ``name``.

    Parameters
    ----------
    name : {"bernoulli", "poisson"}

    Returns
    -------
    Family

    Raises
    ------
    ValueError
        If the name is unknown (the Gaussian family is the conjugate grid route,
        :mod:`synthgeo.inference.grid`, not a :class:`Family`).

    Examples
    --------
    >>> get_family("poisson").name
    'poisson'
    """
    try:
        return FAMILIES[name]()
    except KeyError:
        raise ValueError(f"`family` must be one of {sorted(FAMILIES)} here (gaussian uses the "
                         f"conjugate grid), got {name!r}") from None
