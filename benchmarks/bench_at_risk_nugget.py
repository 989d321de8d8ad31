"""``[model] at_risk_nugget``: "shared" vs "marginal" on the paper design and the bundled example.

The criterion, fixed before measuring (docs/model.md, "At-risk variance"): at (about) equal
risk of the at-risk records, the variant with the *lower risk increase for the other records*
and the *higher Reiter CI overlap* wins.

Per data set and variant, one release (grid route, L = 100, the spec's seed) prints:

- ``n_at``: at-risk records (spatial rule; the same in both variants: the unrestricted fit is
  shared);
- ``tau2_u`` / ``tau2_r``: posterior mean of the nugget τ² of the unrestricted and the
  restricted fit (log-dollars²);
- ``at_risk_u`` / ``at_risk_r``: mean Rao-Blackwellised risk (within 10 %) of the at-risk
  records under each model;
- ``other_u`` / ``other_r``: the same over the other records, and ``other_rise``: the mean of
  r̃ʳ_i − r̃ᵘ_i over them (negative = risk fell); ``n_rose``: other records whose risk rose by
  more than 0.01;
- ``min_overlap``: the smallest Reiter CI overlap of the restricted model over the analyst's
  coefficients.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_at_risk_nugget.py [--seeds 2035 2018 1 2 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import run_release
from synthgeo.pipeline.at_risk_rule import release_predictive_of
from synthgeo.risk.measure import Measure
from synthgeo.risk.rao_blackwell import rb_risk
from synthgeo.studies.simulation import PAPER_SEED, simulate_paper_design

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("shared", "marginal")
MEASURE = Measure.parse("rel:0.1")


def _specs(seeds, tmp: Path):
    yield "bundled", load_spec(bundled_spec_path())
    paper = load_spec(ROOT / "models" / "paper_simulation.toml")
    for seed in seeds:
        if seed == PAPER_SEED:
            yield f"paper {seed}", paper
            continue
        path = tmp / f"paper_{seed}.csv"
        simulate_paper_design(seed).to_csv(path, index=False)
        yield f"paper {seed}", paper.replace("data", path=str(path))


def _row(label: str, variant: str, spec) -> dict:
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec.replace("model", at_risk_nugget=variant))
    seconds = time.perf_counter() - t
    rb = {m: rb_risk(release_predictive_of(spec, res.data, res.fits[m], m), res.data.y,
                     MEASURE, spec.data.back_transform) for m in res.fits}
    at = res.at_risk.at_risk
    rise = rb["restricted"] - rb["unrestricted"]
    util = res.utility.query("model == 'restricted'")
    nugget = {m: float(f.idata.posterior["nugget"].mean()) for m, f in res.fits.items()}
    nan = float("nan")
    return {
        "data": label, "variant": variant, "n_at": int(at.sum()),
        "tau2_u": nugget["unrestricted"], "tau2_r": nugget["restricted"],
        "at_risk_u": float(rb["unrestricted"][at].mean()) if at.any() else nan,
        "at_risk_r": float(rb["restricted"][at].mean()) if at.any() else nan,
        "other_u": float(rb["unrestricted"][~at].mean()),
        "other_r": float(rb["restricted"][~at].mean()),
        "other_rise": float(rise[~at].mean()), "n_rose": int((rise[~at] > 0.01).sum()),
        "min_overlap": float(util["ci_overlap"].min()), "seconds": seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="*", default=[PAPER_SEED, 2018, 1, 2, 3])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec in _specs(args.seeds, Path(tmp)):
            for variant in VARIANTS:
                rows.append(_row(label, variant, spec))
                print(pd.DataFrame(rows[-1:]).round(4).to_string(index=False, header=False),
                      flush=True)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print()
        print(table.round(4).to_string(index=False))
        print("\nmean over data sets:")
        print(table.groupby("variant")[["at_risk_r", "other_rise", "n_rose", "min_overlap",
                                        "tau2_r"]].mean().round(4).to_string())


if __name__ == "__main__":
    main()
