"""Side by side with GPBoost: synthgeo's grid posterior fit against GPBoost's Vecchia fit.

Issue 28, item 3. The simulated paper-style design (``simulate_design.py``: exponential GP,
σ² = 4, τ² = 0.0625, effective range 2,000 m, intercept and one covariate) is drawn at each
size n and fitted one after the other on this machine, each fit in a fresh process of its own:

1. **synthgeo**: the unrestricted model's grid posterior (``[sampling] sampler = "grid"``,
   ``[model] gp = "nngp"``, m = 15 neighbours, the coordinate ordering by x + y) through
   ``pipeline.run.make_fitter``, as ``synthgeo run`` fits it (``bench_workers.py`` times the
   same call); two threads for the grid's cells.
2. **GPBoost** (Sigrist 2022, *JMLR* 23(232)): the maximum-likelihood fit of the same model,
   ``GPModel(cov_function="exponential", likelihood="gaussian", gp_approx="vecchia",
   num_neighbors=15, vecchia_ordering="none", num_parallel_threads=2)``, ``fit(y, X)``, on the
   same response and design matrix (intercept and x1) and the same coordinates (km). The
   records are handed to GPBoost **in synthgeo's NNGP ordering**, so that ``"none"`` (keep the
   data's order) pins GPBoost's Vecchia ordering to synthgeo's; each record's neighbours are
   then its 15 nearest earlier records in both (GPBoost finds them itself). Both approximate
   the response's covariance (latent GP plus nugget; synthgeo's "response-form NNGP").

GPBoost returns a point estimate (no posterior); synthgeo a posterior with independent draws.
A warm-up synthgeo fit at 10⁴ records runs first, untimed, so that numba's compiled kernels
are in the cache (a fresh checkout compiles them in its first process; GPBoost's library is
compiled ahead). The figure is the ratio of the fits' wall times, synthgeo / GPBoost (issue 28's goal: ≤ 1 at
every size); each fit's time is the fitting call alone (neighbour search included, data
reading and imports not: the modules the fit would import on first use, numba and dask.array,
are imported before synthgeo's timer), and its peak RSS is its process's high-water mark ``VmHWM``
(imports and data included). The estimates are compared on one scale: GPBoost's cov_pars
(error variance, marginal variance, range ρ of exp(−d/ρ)) are converted to synthgeo's (τ², σ²,
φ = 1/ρ per metre, effective range 3ρ metres, nugget share τ²/(σ² + τ²)) by
:func:`gpboost_to_synthgeo`, and GPBoost's range and nugget share are placed in synthgeo's
posterior as (estimate − posterior median) / posterior sd. Before the first fit, the GPBoost
process checks the conversion on a tiny exact GP: GPBoost's own negative log-likelihood at
converted parameters against SciPy's Gaussian log density with synthgeo's kernel.

GPBoost is not a synthgeo dependency; it lives in this benchmark's own environment::

    python3 -m venv .venv-gpboost
    .venv-gpboost/bin/pip install -r benchmarks/requirements-gpboost.txt
    .venv-gpboost/bin/python benchmarks/bench_gpboost.py --n 10000 100000

The figures are written as a record in ``benchmarks/results/`` (``_record.py``), from which
``make_performance.py`` makes docs/performance.md; the load average at each fit's start and
end is printed with its figure and kept in the record.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import ROOT, Record  # noqa: E402

#: GPBoost's settings, recorded with the figures (the neighbour count is synthgeo's default)
GPBOOST_SETTINGS = {"cov_function": "exponential", "likelihood": "gaussian",
                    "gp_approx": "vecchia", "num_neighbors": 15, "vecchia_ordering": "none",
                    "num_parallel_threads": 2, "seed": 0}
#: the design's coordinates are handed to both fits in kilometres (synthgeo's internal unit)
COORD_UNIT_M = 1000.0
#: the simulated design's true values (simulate_design.simulate's defaults)
TRUE = {"range": 2000.0, "nugget_share": 0.0625 / (4.0 + 0.0625)}


def gpboost_to_synthgeo(cov_pars, coord_unit_m: float) -> dict[str, float]:
    """Convert GPBoost's exponential ``cov_pars`` to synthgeo's parameters.

    GPBoost's exponential covariance (Diggle & Ribeiro 2007 parametrisation; GPBoost's
    ``cov_function="exponential"``) is C(d) = σ² exp(−d/ρ) + τ² 1[d = 0], with ``cov_pars`` =
    (τ² "Error_term", σ² "GP_var", ρ "GP_range") and d in the unit of the coordinates handed
    to GPBoost. synthgeo's (docs/model.md) is C(d) = σ² exp(−φ d) + τ² 1[d = 0] with φ per
    metre and the effective range 3/φ metres (where the correlation falls to e⁻³ ≈ 0.05). So

        φ = 1 / (ρ · unit),   range = 3 ρ · unit,   nugget share ν = τ² / (σ² + τ²).

    Parameters
    ----------
    cov_pars : sequence of 3 floats
        GPBoost's (error variance, marginal variance, range ρ), variances in response units²,
        ρ in coordinate units.
    coord_unit_m : float
        Metres per coordinate unit handed to GPBoost (1000 for kilometres).

    Returns
    -------
    dict
        ``nugget`` (τ²), ``sigma2`` (σ²), ``phi`` (1/m), ``range`` (effective range, m),
        ``nugget_share`` (ν).

    Raises
    ------
    ValueError
        When ``cov_pars`` is not three positive finite numbers, or ``coord_unit_m`` is not a
        positive finite number.

    Examples
    --------
    >>> p = gpboost_to_synthgeo([0.0625, 4.0, 2.0 / 3.0], 1000.0)
    >>> round(p["range"], 6), round(p["nugget_share"], 6)
    (2000.0, 0.015385)
    """
    pars = np.asarray(cov_pars, dtype=float)
    if pars.shape != (3,) or not np.all(np.isfinite(pars)) or np.any(pars <= 0):
        raise ValueError("`cov_pars` must be GPBoost's three positive exponential covariance "
                         "parameters (error variance, marginal variance, range); got "
                         f"shape {pars.shape}")
    if not (np.isfinite(coord_unit_m) and coord_unit_m > 0):
        raise ValueError("`coord_unit_m` must be a positive number of metres per coordinate "
                         "unit (1000 for kilometres)")
    nugget, sigma2, rho = (float(v) for v in pars)
    rho_m = rho * float(coord_unit_m)
    return {"nugget": nugget, "sigma2": sigma2, "phi": 1.0 / rho_m, "range": 3.0 * rho_m,
            "nugget_share": nugget / (sigma2 + nugget)}


def synthgeo_to_gpboost(sigma2: float, nugget: float, range_m: float,
                        coord_unit_m: float) -> np.ndarray:
    """Convert synthgeo's (σ², τ², effective range in metres) to GPBoost's ``cov_pars``.

    The inverse of :func:`gpboost_to_synthgeo`: ρ = range / (3 · unit).

    Parameters
    ----------
    sigma2, nugget : float
        σ² and τ² (response units²), positive.
    range_m : float
        Effective range 3/φ, metres, positive.
    coord_unit_m : float
        Metres per coordinate unit handed to GPBoost.

    Returns
    -------
    ndarray of shape (3,)
        (error variance τ², marginal variance σ², range ρ in coordinate units).

    Raises
    ------
    ValueError
        When a value is not a positive finite number.

    Examples
    --------
    >>> synthgeo_to_gpboost(4.0, 0.0625, 2000.0, 1000.0).round(6).tolist()
    [0.0625, 4.0, 0.666667]
    """
    for name, v in (("sigma2", sigma2), ("nugget", nugget), ("range_m", range_m),
                    ("coord_unit_m", coord_unit_m)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"`{name}` must be a positive finite number")
    return np.array([float(nugget), float(sigma2), float(range_m) / (3.0 * coord_unit_m)])


def _peak_rss_mib() -> float:
    """Return the peak resident set of this process (MiB): ``VmHWM`` of /proc/self/status.

    Not ``ru_maxrss``: Linux carries the parent's high-water mark into a child across fork
    and exec, so a child of a large process reports at least the parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _child_synthgeo(folder: Path) -> dict:
    """Fit the unrestricted model by the spec's grid route; its figures as a dict."""
    from synthgeo.config import load_spec
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.pipeline.run import make_fitter

    warnings.simplefilter("ignore", UserWarning)
    spec = load_spec(folder / "spec.toml")
    data = prepare_data(spec)
    fitter = make_fitter(spec, data)
    # imports are not the fit's (as GPBoost's library is loaded before its timer): what the
    # fit imports on first use, numba (synthgeo's compiled kernels) and dask.array (xarray's
    # check for chunked arrays), ~0.7 s together, is imported here
    import dask.array  # noqa: F401

    import synthgeo.inference.nngp_effects  # noqa: F401
    import synthgeo.model.vecchia_kernel  # noqa: F401

    rss_before = _peak_rss_mib()
    load_start = _load()
    t = time.perf_counter()
    f = fitter(random_seed=1, label="unrestricted")
    fit_s = time.perf_counter() - t
    load_end = _load()
    post = f.posterior
    rng = post["range"].values.ravel()
    share = (post["nugget"] / (post["sigma2"] + post["nugget"])).values.ravel()

    def summary(v):
        q = np.quantile(v, [0.025, 0.5, 0.975])
        return {"median": float(q[1]), "sd": float(np.std(v, ddof=1)),
                "q2.5": float(q[0]), "q97.5": float(q[2])}

    return {"fit_s": fit_s, "peak_rss_mib": _peak_rss_mib(), "rss_before_fit_mib": rss_before,
            "load_start": load_start, "load_end": load_end, "draws": int(rng.size),
            "engine": {k: f.engine.get(k) for k in ("sampler", "gp", "n_neighbors", "ordering")},
            "stage_s": {k: round(float(v), 2) for k, v in f.seconds.items()},
            "range": summary(rng), "nugget_share": summary(share),
            "sigma2_median": float(np.median(post["sigma2"].values)),
            "nugget_median": float(np.median(post["nugget"].values))}


def _check_conversion_with_gpboost(gpb) -> float:
    """GPBoost's −log L at converted parameters against SciPy's with synthgeo's kernel.

    A tiny exact GP (no Vecchia): 12 points in a 3 km square (km coordinates), σ² = 4,
    τ² = 0.0625, effective range 2,000 m. Returns the absolute difference (nats); raises
    AssertionError above 1e-6 (the parametrisations disagree).
    """
    from scipy.spatial.distance import cdist
    from scipy.stats import multivariate_normal

    from synthgeo.model.kernels import exponential_correlation

    rng = np.random.default_rng(3)
    xy_km = rng.uniform(0, 3, (12, 2))
    y = rng.standard_normal(12)
    sigma2, nugget, range_m = 4.0, 0.0625, 2000.0
    d_m = cdist(xy_km, xy_km) * COORD_UNIT_M
    cov = sigma2 * exponential_correlation(d_m, 3.0 / range_m) + nugget * np.eye(12)
    ours = -multivariate_normal(np.zeros(12), cov).logpdf(y)
    model = gpb.GPModel(gp_coords=xy_km, cov_function="exponential", likelihood="gaussian")
    theirs = model.neg_log_likelihood(
        cov_pars=synthgeo_to_gpboost(sigma2, nugget, range_m, COORD_UNIT_M), y=y)
    diff = abs(float(theirs) - float(ours))
    assert diff < 1e-6, f"GPBoost's exponential parametrisation differs: {diff:.3g} nats"
    return diff


def _jsonable(v):
    return np.asarray(v).tolist()


def _child_gpboost(folder: Path) -> dict:
    """Fit GPBoost's Vecchia ML on the records in synthgeo's ordering; its figures as a dict."""
    import gpboost as gpb

    check = _check_conversion_with_gpboost(gpb)
    z = np.load(folder / "ordered.npz")
    y, X, coords = z["y"], z["X"], z["coords_km"]
    rss_before = _peak_rss_mib()
    load_start = _load()
    t = time.perf_counter()
    model = gpb.GPModel(gp_coords=coords, **GPBOOST_SETTINGS)
    t_model = time.perf_counter() - t
    model.fit(y=y, X=X, params={"trace": False})
    fit_s = time.perf_counter() - t
    load_end = _load()
    cov_pars = np.asarray(model.get_cov_pars(format_pandas=False), float).ravel()[:3]
    out = {"fit_s": fit_s, "model_s": t_model, "peak_rss_mib": _peak_rss_mib(),
           "rss_before_fit_mib": rss_before, "load_start": load_start, "load_end": load_end,
           "version": gpb.__version__, "settings": GPBOOST_SETTINGS,
           "cov_pars": cov_pars.tolist(),
           "coef": np.asarray(model.get_coef(format_pandas=False), float).ravel().tolist(),
           "conversion_check_nats": check,
           "converted": gpboost_to_synthgeo(cov_pars, COORD_UNIT_M)}
    # the optimiser's settings (GPBoost's defaults: none is set here) and its iterations;
    # 1.8.0 names the two accessors with a leading underscore
    for name, calls in (("optim_iter", ("get_num_optim_iter", "_get_num_optim_iter")),
                        ("optim_params", ("get_optim_params", "_get_optim_params")),
                        ("neg_log_likelihood", ("get_current_neg_log_likelihood",))):
        call = next((c for c in calls if hasattr(model, c)), None)
        value = getattr(model, call)() if call else "unavailable in this version"
        out[name] = (value if isinstance(value, str) else float(value) if np.isscalar(value)
                     else json.loads(json.dumps(value, default=_jsonable)))
    return out


def _prepare(n: int, folder: Path) -> dict:
    """Write the design and spec; write the records in synthgeo's NNGP ordering for GPBoost."""
    from simulate_design import SPEC, simulate

    from synthgeo.config import load_spec
    from synthgeo.model.kernels import METRES_PER_KM
    from synthgeo.model.vecchia import ordered_neighbours
    from synthgeo.pipeline.data import prepare_data

    warnings.simplefilter("ignore", UserWarning)
    simulate(n).to_csv(folder / "data.csv", index=False, float_format="%.10g")
    (folder / "spec.toml").write_text(SPEC.format(n=n, seed=1, L=100))
    spec = load_spec(folder / "spec.toml")
    data = prepare_data(spec)
    coords_km = data.sites.coords_m[data.sites.site_index] / METRES_PER_KM
    # the ordering NNGPCovariance uses for the unrestricted fit (every site active)
    order = ordered_neighbours(coords_km, spec.model.n_neighbors).order
    np.savez(folder / "ordered.npz", y=data.y[order], X=data.X[order],
             coords_km=coords_km[order])
    return {"records": int(data.n_records), "sites": int(data.sites.n_sites),
            "n_neighbors": int(spec.model.n_neighbors), "coef_names": list(data.coef_names)}


def _run_child(which: str, folder: Path, python: str, n: int = 0) -> dict:
    """Run one step (``prepare``, ``synthgeo``, ``gpboost``) in a fresh process; its dict."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    proc = subprocess.run([python, __file__, "--child", which, "--folder", str(folder),
                           "--n", str(n)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the {which} step failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run the comparison at each ``--n`` (or one fit, in a child process)."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--gpboost-python", default=str(ROOT / ".venv-gpboost" / "bin" / "python"),
                    help="the interpreter of the environment with gpboost installed")
    ap.add_argument("--child", choices=["prepare", "synthgeo", "gpboost"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:  # one step in its own process: the driver stays small (nothing to inherit)
        out = (_prepare(a.n[0], Path(a.folder)) if a.child == "prepare" else
               (_child_synthgeo if a.child == "synthgeo" else _child_gpboost)(Path(a.folder)))
        print(json.dumps(out), flush=True)
        return
    if not Path(a.gpboost_python).exists():
        raise SystemExit(f"--gpboost-python {a.gpboost_python} does not exist; create the "
                         "environment (see this script's docstring) or name its interpreter")
    sizes = sorted(a.n)
    rec = Record.start("bench_gpboost", case="-".join(f"n{n}" for n in sizes))
    with tempfile.TemporaryDirectory() as tmp:  # numba compiles its kernels into the cache
        _run_child("prepare", Path(tmp), sys.executable, 10_000)  # once, untimed: no
        _run_child("synthgeo", Path(tmp), sys.executable)  # timed fit pays the compilation
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            design = _run_child("prepare", folder, sys.executable, n)
            sg = _run_child("synthgeo", folder, sys.executable)
            print(f"  (n = {n:,}: synthgeo fit {sg['fit_s']:.1f} s, peak RSS "
                  f"{sg['peak_rss_mib']:.0f} MiB, load {sg['load_start'][0]:.2f} -> "
                  f"{sg['load_end'][0]:.2f}; GPBoost next)", flush=True)
            gb = _run_child("gpboost", folder, a.gpboost_python)
        conv = gb["converted"]
        z = {k: (conv[k] - sg[k]["median"]) / sg[k]["sd"] for k in ("range", "nugget_share")}
        row = {"n": n, **design, "synthgeo": sg, "gpboost": gb,
               "ratio": sg["fit_s"] / gb["fit_s"], "gpboost_in_posterior_sd": z}
        rows.append(row)
        print(f"n = {n:,} ({design['sites']:,} sites, m = {design['n_neighbors']}, "
              f"coordinate ordering x + y pinned in both)", flush=True)
        for name, r in (("synthgeo grid posterior (NNGP)", sg),
                        (f"GPBoost {gb['version']} Vecchia ML", gb)):
            print(f"  {name:34s} {r['fit_s']:8.1f} s  peak RSS {r['peak_rss_mib']:7.0f} MiB  "
                  f"load {r['load_start'][0]:.2f} -> {r['load_end'][0]:.2f}", flush=True)
        print(f"  ratio synthgeo / GPBoost = {row['ratio']:.2f}", flush=True)
        for k, unit in (("range", "m"), ("nugget_share", "")):
            print(f"  {k:12s} synthgeo median {sg[k]['median']:.4g} {unit} (sd {sg[k]['sd']:.3g}, "
                  f"95% {sg[k]['q2.5']:.4g}-{sg[k]['q97.5']:.4g}); GPBoost {conv[k]:.4g} {unit} "
                  f"= {z[k]:+.2f} posterior sd; true {TRUE[k]:.4g}", flush=True)
        rec.figure(f"n = {n:,}: synthgeo unrestricted grid fit (NNGP, m = 15)",
                   round(sg["fit_s"], 1), "s")
        rec.figure(f"n = {n:,}: GPBoost {gb['version']} Vecchia ML fit (m = 15, 2 threads)",
                   round(gb["fit_s"], 1), "s")
        rec.figure(f"n = {n:,}: ratio synthgeo / GPBoost", round(row["ratio"], 2), "",
                   goal_max=1.0)
        rec.figure(f"n = {n:,}: peak RSS, synthgeo fit's process",
                   round(sg["peak_rss_mib"]), "MiB")
        rec.figure(f"n = {n:,}: peak RSS, GPBoost fit's process",
                   round(gb["peak_rss_mib"]), "MiB")
        rec.figure(f"n = {n:,}: GPBoost's range in synthgeo's posterior",
                   round(z["range"], 2), "posterior sd")
        rec.figure(f"n = {n:,}: GPBoost's nugget share in synthgeo's posterior",
                   round(z["nugget_share"], 2), "posterior sd")
        rec.figure(f"n = {n:,}: load average (1 min) at the fits' starts",
                   f"{sg['load_start'][0]:.2f} / {gb['load_start'][0]:.2f}", "")
    rec.finish(detail={"gpboost_settings": GPBOOST_SETTINGS, "coord_unit_m": COORD_UNIT_M,
                       "true": TRUE, "rows": rows})


if __name__ == "__main__":
    main()
