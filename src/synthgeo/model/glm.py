"""The GLM fit by formula (statsmodels).

The analyst's model on each implicate and the discrete risk baseline's model
(:mod:`synthgeo.utility.glm`, :mod:`synthgeo.risk.discrete`).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["fit_glm"]


def fit_glm(formula: str, data: pd.DataFrame, *, family: str):
    """Fit the analyst's GLM (statsmodels) and return its results.

    Parameters
    ----------
    formula : str
        Patsy formula, e.g. ``"searched ~ race + gender"``.
    data : pandas.DataFrame
    family : {"bernoulli", "poisson", "gaussian"}
        Logit, log or identity link.

    Returns
    -------
    statsmodels GLMResults

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = (rng.random(200) < 1 / (1 + np.exp(-df["x"]))).astype(float)
    >>> round(float(fit_glm("y ~ x", df, family="bernoulli").params["x"]), 1)
    1.0
    """
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    fam = {"bernoulli": sm.families.Binomial(), "poisson": sm.families.Poisson(),
           "gaussian": sm.families.Gaussian()}[family]
    return smf.glm(formula, data, family=fam).fit()
