"""Cross-check of synthgeo's pMSE and SPECKS against ONS synthgauge 2.2.0 (issue 27, item 1).

synthgauge 2.2.0 needs seaborn < 0.12, which does not import beside the matplotlib synthgeo
uses, so this script makes its own virtual environment (``--venv``, default
``/tmp/synthgeo-synthgauge-venv``; made once, reused after) and installs ``synthgauge==2.2.0``,
``seaborn<0.12``, ``matplotlib<3.9`` and ``numpy<2`` into it with pip (:data:`REQUIREMENTS`),
from the package index pip is configured with. The
confidential rows and one implicate of each case are written to CSV files, synthgauge scores
them in its environment and synthgeo here:

- pMSE with synthgauge's ``method="logr"`` (every feature and every two-way product, one-hot
  text columns with the first level dropped) against synthgeo's ``terms="interactions",
  coordinates="none"`` (the same column space); synthgauge's logistic regression is
  scikit-learn's, passed ``penalty=None`` (its default is an L2 penalty, C = 1, which is not
  the pMSE's maximum-likelihood model), ``max_iter=100000, tol=1e-12``;
- SPECKS with synthgauge's ``specks(real, synth, LogisticRegression, ...)`` (main effects)
  against synthgeo's ``terms="main"`` SPECKS;
- for information, synthgauge's pMSE ratio and standardised pMSE, whose null is the
  independent-sample formula (k − 1)(1 − c)²/N with k counted from the features, beside
  synthgeo's ratio against the paired permutation null (docs/risk-and-utility.md, "General
  utility: pMSE", why they differ).

Cases: the bundled example (140 records: log_price and sqft_living; the restricted model's
first implicate of ``run_release``) and a simulated file (2,000 records, two numeric covariates
and a text one). Writes a record via ``_record.py``.

Usage::

    python benchmarks/bench_pmse_synthgauge.py [--venv /tmp/synthgeo-synthgauge-venv]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402

from synthgeo.utility.pmse import pmse_scores  # noqa: E402

#: seaborn 0.11 calls matplotlib.cm.register_cmap (gone in matplotlib 3.9), and matplotlib 3.8
#: wheels are built against numpy 1.x: hence the two upper bounds beside the issue's.
REQUIREMENTS = ["synthgauge==2.2.0", "seaborn<0.12", "matplotlib<3.9", "numpy<2"]

#: Run in synthgauge's environment: argv = real.csv synth.csv; prints JSON.
SYNTHGAUGE_SCRIPT = r"""
import json, sys, warnings
import pandas as pd
from sklearn.linear_model import LogisticRegression
import synthgauge
from synthgauge.metrics import propensity as P
warnings.simplefilter("ignore")
real, synth = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
kw = dict(penalty=None, max_iter=100000, tol=1e-12)
combined, indicator = P._combine_encode_and_pop(real, synth)
combined = combined.astype(float)
out = {"version": synthgauge.__version__,
       "pmse_logr": float(P.pmse(combined, indicator, "logr", **kw)),
       "ratio_logr": float(P.pmse_ratio(combined, indicator, "logr", **kw)),
       "standardised_logr": float(P.pmse_standardised(combined, indicator, "logr", **kw)),
       "specks": float(P.specks(real, synth, LogisticRegression, **kw))}
print(json.dumps(out))
"""


def ensure_venv(venv: Path) -> Path:
    """Return the venv's python, creating the venv and installing synthgauge when absent."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} and installing {' '.join(REQUIREMENTS)} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
    return python


def bundled_case():
    """Return the bundled example: confidential (model scale), restricted implicate 1."""
    from synthgeo.config import bundled_spec_path
    from synthgeo.pipeline import run_release

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(bundled_spec_path())
    conf = pd.DataFrame({"log_price": res.data.y,
                         "sqft_living": res.data.frame["sqft_living"].to_numpy(float)})
    syn = conf.assign(log_price=res.implicates["restricted"]["y_synthetic"].values[0])
    return conf, syn, "log_price"


def simulated_case(n: int = 2000, seed: int = 2027):
    """Return a file with a text covariate whose synthesis misses an interaction."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.uniform(0, 3, size=n)
    kind = rng.choice(["house", "condo", "multi"], size=n, p=[0.6, 0.3, 0.1])
    y = 1.0 + 0.5 * a + 0.3 * b + 0.4 * a * (kind == "condo") + rng.normal(scale=0.5, size=n)
    conf = pd.DataFrame({"y": y, "a": a, "b": b, "kind": kind})
    syn = conf.assign(y=1.0 + 0.5 * a + 0.3 * b + rng.normal(scale=0.55, size=n))
    return conf, syn, "y"


def score(python: Path, conf: pd.DataFrame, syn: pd.DataFrame, synthesized: str) -> dict:
    """Both implementations on one case."""
    with tempfile.TemporaryDirectory() as tmp:
        real_csv, syn_csv = Path(tmp) / "real.csv", Path(tmp) / "synth.csv"
        conf.to_csv(real_csv, index=False, float_format="%.17g")
        syn.to_csv(syn_csv, index=False, float_format="%.17g")
        # read back what synthgauge reads, so both score the same numbers
        conf, syn = pd.read_csv(real_csv), pd.read_csv(syn_csv)
        out = subprocess.run([str(python), "-c", SYNTHGAUGE_SCRIPT, str(real_csv),
                              str(syn_csv)], check=True, capture_output=True, text=True)
    sg = json.loads(out.stdout)
    inter = pmse_scores(conf, [syn], synthesized=[synthesized], terms="interactions",
                        coordinates="none", n_permutations=50, random_seed=1)
    main = pmse_scores(conf, [syn], synthesized=[synthesized], terms="main",
                       coordinates="none", n_permutations=50, random_seed=1)
    # the same model by statsmodels (Newton, its own convergence), to say whose error the
    # difference is
    import patsy
    import statsmodels.api as sm

    info = patsy.dmatrix(inter.formula, conf).design_info
    X = np.vstack([patsy.build_design_matrices([info], f)[0] for f in (conf, syn)])
    t = np.r_[np.zeros(len(conf)), np.ones(len(conf))]
    p_sm = sm.Logit(t, X).fit(disp=0, method="newton", maxiter=200, tol=1e-14).predict(X)
    ours = {"pmse_interactions": float(inter.by_implicate["pmse"].iloc[0]),
            "pmse_statsmodels": float(np.mean((p_sm - 0.5) ** 2)),
            "ratio_paired_interactions": float(inter.by_implicate["ratio"].iloc[0]),
            "s_pmse_paired_interactions": float(inter.by_implicate["s_pmse"].iloc[0]),
            "specks_main": float(main.by_implicate["specks"].iloc[0])}
    return {"n_records": len(conf), "synthgauge": sg, "synthgeo": ours,
            "pmse_abs_diff": abs(sg["pmse_logr"] - ours["pmse_interactions"]),
            "pmse_rel_diff": abs(sg["pmse_logr"] - ours["pmse_interactions"])
            / ours["pmse_interactions"],
            "specks_abs_diff": abs(sg["specks"] - ours["specks_main"]),
            "pmse_rel_diff_statsmodels": abs(ours["pmse_statsmodels"]
                                             - ours["pmse_interactions"])
            / ours["pmse_interactions"]}


def main(argv=None) -> None:
    """Score every case with both, print and record (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=Path("/tmp/synthgeo-synthgauge-venv"))
    args = ap.parse_args(argv)
    python = ensure_venv(args.venv)
    rec = Record.start("bench_pmse_synthgauge", case="bundled+simulated")
    cases = {"bundled": bundled_case(), "simulated": simulated_case()}
    results = {}
    for name, (conf, syn, synthesized) in cases.items():
        r = score(python, conf, syn, synthesized)
        results[name] = r
        sg, ours = r["synthgauge"], r["synthgeo"]
        print(f"{name} ({r['n_records']} records), synthgauge {sg['version']}:")
        print(f"  pMSE (logr, interactions): synthgauge {sg['pmse_logr']:.10g}, synthgeo "
              f"{ours['pmse_interactions']:.10g}, |diff| {r['pmse_abs_diff']:.2g} "
              f"(relative {r['pmse_rel_diff']:.2g}); statsmodels {ours['pmse_statsmodels']:.10g} "
              f"(relative to synthgeo {r['pmse_rel_diff_statsmodels']:.2g})")
        print(f"  SPECKS (main effects): synthgauge {sg['specks']:.10g}, synthgeo "
              f"{ours['specks_main']:.10g}, |diff| {r['specks_abs_diff']:.2g}")
        print(f"  ratio: synthgauge (independent-sample formula) {sg['ratio_logr']:.3g}, "
              f"synthgeo (paired null) {ours['ratio_paired_interactions']:.3g}; standardised: "
              f"{sg['standardised_logr']:.3g} vs {ours['s_pmse_paired_interactions']:.3g}")
        rec.figure(f"{name}: |pMSE synthgauge - synthgeo|", float(f"{r['pmse_abs_diff']:.3g}"),
                   "")
        rec.figure(f"{name}: |SPECKS synthgauge - synthgeo|",
                   float(f"{r['specks_abs_diff']:.3g}"), "")
    rec.finish(detail={"cases": results, "requirements": REQUIREMENTS})


if __name__ == "__main__":
    main()
