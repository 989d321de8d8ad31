"""Whole pipeline (both fits + L = 100 implicates + risk + Reiter) by size and engine.

Each case runs in its own process so that its peak RSS is its own. Exact is run where it is
feasible; beyond, its cost is estimated from the measured seconds per grid cell.

    python benchmarks/bench_scale.py            # 500, 932, 5,000 and 25,357 records
    python benchmarks/bench_scale.py 932 25357  # a subset of the sizes

The figures are written as a record in ``benchmarks/results/`` (``_record.py``), from which
``make_performance.py`` makes docs/performance.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LUCAS = ROOT.parent / "shared" / "data" / "lucas_oh_house_sales.csv"
sys.path.insert(0, str(HERE))

from _record import Record  # noqa: E402

DEFAULT_SIZES = [500, 932, 5000, 25357]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
import pandas as pd
from pathlib import Path
import synthgeo as sg
t = time.perf_counter()
n, gp = {n}, {gp!r}
if n == 932:
    spec = sg.load_spec(Path({root!r}) / "models" / "sacramento_all.toml")
    res = sg.run(spec.replace("model", gp=gp)).result
else:
    from _engines import run_engine
    fr = pd.read_csv({lucas!r})
    if n < len(fr):
        fr = fr.sample(n, random_state=1)
    res = run_engine(fr, gp=gp, response="log_price", covariates=["TLA", "age", "beds"],
                     crs="EPSG:2834")
out = dict(res.seconds)
out["total"] = time.perf_counter() - t
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["max_r_hat"] = max(f.convergence.max_r_hat for f in res.fits.values())
out["grid_evaluations"] = [f.engine.get("grid_evaluations") for f in res.fits.values()]
out["n_at_risk"] = int(res.at_risk.n_at_risk)
print("RESULT " + json.dumps(out))
"""

EXACT_FEASIBLE = 1000


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or DEFAULT_SIZES
    rec = Record.start("bench_scale", case="default" if sizes == DEFAULT_SIZES
                       else "n" + "-".join(map(str, sizes)))
    rows = []
    for n in sizes:
        for gp in ("exact", "nngp"):
            if gp == "exact" and n > EXACT_FEASIBLE:
                print(f"{n:>6} exact: not run (dense Cholesky; bench_nngp.py crossover: "
                      f"1.5 s per grid cell at 4,000 records, x ~850 cells per fit)")
                continue
            code = CHILD.format(here=str(HERE), root=str(ROOT), lucas=str(LUCAS), n=n, gp=gp)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if not line:
                print(f"{n:>6} {gp}: failed\n{proc.stderr[-2000:]}")
                continue
            r = json.loads(line[0][7:])
            rows.append((n, gp, r))
            stages = ", ".join(f"{k} {r[k]:.1f}" for k in
                               ("load", "fit_unrestricted", "fit_restricted", "synthesize",
                                "risk", "utility") if k in r)
            print(f"{n:>6} {gp:5s}: total {r['total']:.1f} s ({stages}); peak RSS "
                  f"{r['peak_rss_mb']:,.0f} MB; max R-hat {r['max_r_hat']:.4f}; grid cells "
                  f"{r['grid_evaluations']}; at-risk {r['n_at_risk']}", flush=True)
            rec.figure(f"{n:,} records, {gp}: whole pipeline", round(r["total"], 1), "s")
            rec.figure(f"{n:,} records, {gp}: peak RSS", round(r["peak_rss_mb"]), "MiB")
    if rows:
        rec.finish(detail={"rows": [{"n": n, "gp": gp, **r} for n, gp, r in rows]})


if __name__ == "__main__":
    main()
