"""The data users' README written into ``release/`` (publishable: no confidential value).

It says what is synthetic and what is not, names the released files, and shows how to analyse
multiply-imputed partially synthetic data with Reiter's (2003) rules, in Python and in R. It
states neither M nor the number of at-risk records (they would tell an attacker which records
were smoothed), nor anything computed from the true values; the combined estimates it quotes
come from the synthetic implicates alone. No timestamp: same spec and seed, same bytes.
"""

from __future__ import annotations

__all__ = ["data_user_readme", "csv_name"]


def _smoothing_words(spec) -> str:
    """Say in words what the released model did to the spatial effect at isolated records."""
    m = spec.model
    if m.gamma == "inf":
        if getattr(m, "at_risk_effect", "zero") == "kriged":
            return "replaced by the level predicted from the surrounding records"
        return "removed"
    if m.gamma == "auto":
        return "shrunk until it is no larger than the noise"
    return f"shrunk towards zero (gamma = {m.gamma})"


def csv_name(implicate: int, n_implicates: int) -> str:
    """File name of one implicate's CSV, e.g. ``implicate_007.csv`` (zero-padded, >= 3 digits)."""
    width = max(len(str(n_implicates)), 3)
    return f"implicate_{int(implicate):0{width}d}.csv"


def _check_values(result) -> str:
    """Return the released model's combined estimates (synthetic data only) as Markdown."""
    util = result.utility
    rows = util[util["model"] == "restricted"]
    if not len(rows):
        return ""
    level = round(100 * (1 - result.spec.utility.alpha))
    lines = [f"| term | q_bar | {level}% interval |", "|---|---|---|"]
    for r in rows.itertuples(index=False):
        lines.append(f"| {r.term} | {r.estimate:.6g} | ({r.lower:.6g}, {r.upper:.6g}) |")
    return ("\nOn this release, both examples print (up to rounding):\n\n"
            + "\n".join(lines) + "\n")


def data_user_readme(result) -> str:
    """Return the README for ``release/`` as Markdown.

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    str
        Markdown; names the actual released files and columns.

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets.
       Survey Methodology, 29(2), 181-188.
    .. [2] Quick, H., Holan, S. H., & Wikle, C. K. (2018). Generating partially synthetic
       geocoded public use data with decreased disclosure risk by using differential
       smoothing. JRSS A, 181(3), 649-661. doi:10.1111/rssa.12360
    """
    from synthgeo._versions import package_versions

    spec, data = result.spec, result.data
    d = spec.data
    L = spec.synthesis.n_implicates
    first, last = csv_name(1, L), csv_name(L, L)
    loc_cols = [c for c in (d.x, d.y) if c]
    src_crs = data.gdf.attrs.get("source_crs") or data.gdf.crs
    try:
        from pyproj import CRS

        crs = CRS.from_user_input(src_crs)
        crs_label = crs.name + (f" (EPSG:{crs.to_epsg()})" if crs.to_epsg() else "")
    except Exception:  # noqa: BLE001 - a label only
        crs_label = str(src_crs)[:60]
    cols = [f"| `{data.id_column}` | record id (as in the confidential file) | real |"]
    cols += [f"| `{c}` | location coordinate, {crs_label} | real, unchanged |" for c in loc_cols]
    cols += [f"| `{c}` | covariate | real, unchanged |" for c in d.covariates]
    cols += [f"| `{d.response}` | response{' (log scale)' if d.back_transform == 'exp' else ''}"
             " | **synthetic** |"]
    formula = spec.formula
    n = data.n_records
    alpha = spec.utility.alpha
    tq = 1 - alpha / 2  # t quantile of a (1 - alpha) interval
    level = f"{100 * (1 - alpha):g}%"
    smoothing = _smoothing_words(spec)
    back = (f"\n`{d.response}` is on the log scale: `exp({d.response})` is on the original "
            "scale\n(e.g. dollars). Combine estimates on the scale the model is fitted on.\n"
            if d.back_transform == "exp" else "")
    return f"""# Partially synthetic public-use file

Produced by synthgeo {package_versions()['synthgeo']} from a confidential file of {n} records.
Every record is in the file; no record was suppressed and no location was moved.

## What is synthetic, what is real
- **Synthetic**: `{d.response}`, in every row of every implicate. Each value is a draw from a
  Bayesian spatial model (Gaussian-process regression on the covariates and location) fitted to
  the confidential data, so that the file keeps the relationships the model captures while no
  row carries its record's true value.
- **Differential smoothing** (Quick, Holan & Wikle 2018): for records in spatially sparse areas,
  whose location could identify them, the model's spatial effect was {smoothing}, so their synthetic
  values follow the covariates and the wider area rather than the record itself. Local spatial
  detail around isolated locations is therefore weaker than in the confidential data.
- **Real, unchanged**: the record id, the location
  ({', '.join(f'`{c}`' for c in loc_cols) or 'the geometry'}) and the covariates
  ({', '.join(f'`{c}`' for c in d.covariates) or 'none'}).
- **Not released**: every other column of the confidential file.
{back}
| column | meaning | status |
|---|---|---|
""" + "\n".join(cols) + f"""

## Files
There are **m = {L} implicates**: {L} complete copies of the file that differ only in the
synthetic `{d.response}`.
- `implicates.parquet`: all implicates in one GeoParquet file (long form, {n * L} rows), with an
  `implicate` column numbered 1 to {L} and the point geometry in {crs_label}.
- `csv/{first}` … `csv/{last}`: one CSV per implicate ({n} rows each), the
  columns above without geometry, for users without GIS tools.

## How to analyse: Reiter's (2003) rules for partially synthetic data
Analyse **every** implicate the way you would analyse the real file, then combine. One
implicate alone understates the uncertainty; averaging the implicates into one file and
analysing that is wrong too.

With q_l the estimate and u_l its squared standard error from implicate l = 1, …, m:

    q_bar = (1/m) Σ q_l                      the point estimate
    b_m   = Σ (q_l − q_bar)² / (m − 1)        between-implicate variance
    u_bar = (1/m) Σ u_l                       mean within-implicate variance
    T_p   = u_bar + b_m / m                   its variance (Reiter 2003)
    df    = (m − 1) (1 + u_bar / (b_m / m))²  degrees of freedom of the t reference
    {level} interval: q_bar ± t_(df, {tq:g}) √T_p

This is **not** Rubin's rule for multiple imputation of missing data (T = u_bar + (1 + 1/m) b_m):
that rule is for files in which missing values were imputed and overstates the variance here.

### Python (pandas, NumPy, statsmodels, SciPy); run inside this folder
```python
import glob

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats

files = sorted(glob.glob("csv/implicate_*.csv"))
m = len(files)                                    # {L}
fits = [smf.ols({formula!r}, data=pd.read_csv(f)).fit() for f in files]
q = np.array([f.params.to_numpy() for f in fits])          # (m, terms) estimates
u = np.array([f.bse.to_numpy() ** 2 for f in fits])        # (m, terms) squared std. errors
q_bar = q.mean(axis=0)
b_m = q.var(axis=0, ddof=1)
u_bar = u.mean(axis=0)
T_p = u_bar + b_m / m
df = (m - 1) * (1 + u_bar / (b_m / m)) ** 2
half = stats.t.ppf({tq:g}, df) * np.sqrt(T_p)
table = pd.DataFrame({{"q_bar": q_bar, "se": np.sqrt(T_p), "df": df,
                      "lower": q_bar - half, "upper": q_bar + half}},
                     index=fits[0].params.index)
print(table.to_string(float_format="%.6g"))
```

### R (base R only); run inside this folder
```r
files <- sort(Sys.glob("csv/implicate_*.csv"))
m <- length(files)                                # {L}
fits <- lapply(files, function(f) lm({formula}, data = read.csv(f)))
q <- t(sapply(fits, coef))                        # (m, terms) estimates
u <- t(sapply(fits, function(f) diag(vcov(f))))   # (m, terms) squared std. errors
q_bar <- colMeans(q)
b_m <- apply(q, 2, var)
u_bar <- colMeans(u)
T_p <- u_bar + b_m / m
df <- (m - 1) * (1 + u_bar / (b_m / m))^2
half <- qt({tq:g}, df) * sqrt(T_p)
print(signif(cbind(q_bar, se = sqrt(T_p), df, lower = q_bar - half, upper = q_bar + half), 6))
```
{_check_values(result)}
For another model, change the formula (or the fitting function) and keep the combining
lines: they apply to any estimate with a standard error. Use the GeoParquet file
(`geopandas.read_parquet("implicates.parquet")`, R `sfarrow`/`geoarrow`) for spatial
analyses, again per implicate (`implicate` column) and combined the same way.

## References
- Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. Survey
  Methodology 29(2), 181–188.
- Quick, H., Holan, S. H. & Wikle, C. K. (2018). Generating partially synthetic geocoded public
  use data with decreased disclosure risk by using differential smoothing. Journal of the Royal
  Statistical Society A 181(3), 649–661. doi:10.1111/rssa.12360
"""

