"""Memory and time profile of a ``synthgeo`` command, stage by stage, in its own process.

The command runs in a child process (so the peak is its own) with a thread sampling the
resident set size (RSS) every 20 ms; the pipeline's stage functions (load, locations, each
fit and its grid and posterior draws, synthesis and its NNGP effect draws, the at-risk rule,
risk and the leave-one-out baseline, the neighbour check, the detector, utility, spatial
utility, general utility, report, write) are wrapped so that every sample is charged to the
innermost stage running. Printed per stage:
wall seconds, CPU seconds (all the process's threads, ``time.process_time``: the figure to
read on a shared machine) and the peak RSS while it ran; for the whole process: wall seconds
and the kernel's peak RSS (``ru_maxrss`` of the child, which includes imports and everything
the samples miss) and its CPU seconds (user + system: a guide to the wall time on a quiet
machine when the machine is shared).
With ``--tracemalloc N`` the N allocation sites holding most memory at the traced peak are
printed too (Python and NumPy allocations; slower). Every run writes a record in
``benchmarks/results/`` (``_record.py``: command, date, machine, load at start and end, commit,
figures), from which ``make_performance.py`` makes docs/performance.md.

Cases (data and specs are made in a temporary folder; nothing under the repository changes):

- ``bundled``: ``run`` of the bundled spec with ``[sampling] sampler = "grid"``;
- ``lucas``: ``run models/lucas_county.toml`` (25,357 records);
- ``paper-compare``: ``compare models/paper_simulation.toml``;
- ``compare-2930``: ``compare`` on 2,930 Lucas County records (a seeded subset of
  ``/work/shared/data/lucas_oh_house_sales.csv``; the issue's 2,930-record file is not in
  the repository), L = 100;
- ``run-1e5``: ``run`` on 10⁵ records of the simulated paper-style design
  (``benchmarks/simulate_design.py``);
- ``run-3e5``: the same at 3 × 10⁵ records (issue 28: which stages grow faster than N on the
  way to 10⁶);
- ``run-1e6``: the same at 10⁶ records (issue 28 item 1: ≤ 60 min and ≤ 8 GB whole).

Usage::

    python benchmarks/bench_memory.py compare-2930 [--tracemalloc 8] [--implicates L]
    python benchmarks/bench_memory.py -- run models/lucas_county.toml --out /tmp/o --overwrite
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _record import Record  # noqa: E402

#: the time goals (issue 22, "Done when"; run-1e5: issue 28 item 2, 5 min, stricter than issue
#: 22's 15): case -> (wall seconds, peak RSS MiB)
GOALS = {"lucas": (120, 2048), "run-1e5": (300, 4096), "compare-2930": (None, 2048),
         "run-1e6": (3600, 8192)}
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path(os.environ.get("SYNTHGEO_SHARED_DATA", "/work/shared/data"))

#: (module, function, stage label): the functions whose run time is a stage.
STAGES = (
    ("synthgeo.pipeline.data", "prepare_data", "load"),
    ("synthgeo.pipeline.run", "_locations", "locations"),
    ("synthgeo.inference.grid", "fit_gp_grid", "fit"),
    ("synthgeo.inference.grid_posterior", "grid_posterior", "  grid"),
    ("synthgeo.inference.grid_posterior", "GridPosterior.draw", "  posterior draws"),
    ("synthgeo.inference.nuts", "fit_gp", "fit"),
    ("synthgeo.synthesis.implicates", "draw_implicates", "synthesize"),
    ("synthgeo.inference.nngp_effects", "NNGPEffects.draw", "  w draws (NNGP)"),
    ("synthgeo.pipeline.risk_stage", "score_release_risk", "risk + baselines"),
    ("synthgeo.risk.loo", "baseline_loo_sets", "  LOO baseline"),
    ("synthgeo.pipeline.risk_stage", "score_model", "  release + public baseline"),
    ("synthgeo.pipeline.release_attack", "score_release_attacker", "  release attacker"),
    ("synthgeo.pipeline.risk_stage", "compare_loo_units", "  other leave-out units"),
    ("synthgeo.risk.within_eps", "within_eps_risk", "risk"),
    ("synthgeo.pipeline.run", "_at_risk", "at-risk rule"),
    ("synthgeo.pipeline.at_risk_rule", "run_neighbour_check", "neighbour check"),
    ("synthgeo.pipeline.detector_stage", "detector_block", "detector"),
    ("synthgeo.utility.reiter", "compare_to_confidential", "utility"),
    ("synthgeo.utility.spatial", "spatial_utility_tables", "spatial utility"),
    ("synthgeo.utility.spatial", "semivariogram", "  semivariogram"),
    ("synthgeo.utility.spatial", "morans_i", "  Moran's I"),
    ("synthgeo.pipeline.general_utility", "general_utility", "general utility (pMSE)"),
    ("synthgeo.release.report", "render_report", "report"),
    ("synthgeo.release.writer", "write_release", "write"),
    ("synthgeo.studies.compare", "write_comparison", "write"),
)


# --- child: run the command, sample RSS ------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Profile:
    def __init__(self, top: int) -> None:
        self.stack: list[str] = ["import/other"]
        self.stats: dict[str, dict] = {}
        self.top, self.snapshot, self.snap_at = top, None, 0
        self.done = threading.Event()

    def sample(self) -> None:
        import tracemalloc

        while not self.done.wait(0.02):
            try:
                self._sample_once(tracemalloc)
            except Exception as exc:  # noqa: BLE001 - a profiler must not stop the job
                print(f"bench_memory: sampler error {exc!r}", file=sys.stderr)

    def _sample_once(self, tracemalloc) -> None:
        if True:
            rss = _rss_bytes()
            for name in set(self.stack):
                s = self.stats.setdefault(name, {"seconds": 0.0, "cpu": 0.0, "calls": 0,
                                                 "peak": 0})
                s["peak"] = max(s["peak"], rss)
            if self.top and tracemalloc.is_tracing():
                cur = tracemalloc.get_traced_memory()[0]
                if cur > 1.05 * self.snap_at:  # a new traced high: keep its allocation sites
                    self.snapshot, self.snap_at = tracemalloc.take_snapshot(), cur

    def wrap(self, fn, label):
        def staged(*args, **kwargs):
            self.stack.append(label)
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                s = self.stats.setdefault(label, {"seconds": 0.0, "calls": 0, "peak": 0})
                s.setdefault("cpu", 0.0)
                s["seconds"] += time.perf_counter() - t
                s["cpu"] += time.process_time() - c  # every thread of the process
                s["calls"] += 1
                self.stack.pop()

        staged.__wrapped__ = fn
        return staged


def _install(prof: _Profile) -> None:
    import importlib

    for mod in ("synthgeo.cli.main", "synthgeo.pipeline.run", "synthgeo.pipeline.risk_stage",
                "synthgeo.risk.loo", "synthgeo.release.writer", "synthgeo.inference.nngp_effects",
                "synthgeo.inference.grid_posterior", "synthgeo.pipeline.general_utility",
                "synthgeo.pipeline.release_attack", "synthgeo.pipeline.at_risk_rule",
                "synthgeo.pipeline.detector_stage",
                "synthgeo.release.report", "synthgeo.studies.compare",
                "synthgeo.inference.grid", "synthgeo.inference.nuts"):
        importlib.import_module(mod)
    for mod, name, label in STAGES:
        if "." in name:  # a method: wrapped on its class
            cls, meth = name.split(".")
            owner = getattr(sys.modules[mod], cls)
            setattr(owner, meth, prof.wrap(getattr(owner, meth), label))
            continue
        obj = getattr(sys.modules[mod], name)
        wrapped = prof.wrap(obj, label)
        for m in list(sys.modules.values()):
            if getattr(m, "__name__", "").startswith("synthgeo") and \
                    getattr(m, name, None) is obj:
                setattr(m, name, wrapped)


def child(argv: list[str], top: int) -> None:
    """Run ``synthgeo argv`` in this process and print one ``PROFILE {json}`` line."""
    import tracemalloc

    if top:
        tracemalloc.start(1)
    prof = _Profile(top)
    t0 = time.perf_counter()
    thread = threading.Thread(target=prof.sample, daemon=True)
    thread.start()
    _install(prof)
    from synthgeo.cli.main import main

    rc = main(argv)
    prof.done.set()
    thread.join()
    out = {"rc": rc, "wall": time.perf_counter() - t0,
           "stages": {k: {**v, "peak_mb": v["peak"] / 2**20} for k, v in prof.stats.items()}}
    if prof.snapshot is not None:
        stats = prof.snapshot.statistics("lineno")[:top]
        out["traced_peak_mb"] = prof.snap_at / 2**20
        out["top"] = [f"{s.size / 2**20:8.1f} MB  {s.traceback[0]}" for s in stats]
    print("PROFILE " + json.dumps(out), flush=True)


# --- parent: cases, the child process, the table ---------------------------------------------


def _lucas_spec(folder: Path, n: int | None, L: int) -> Path:
    import pandas as pd

    src = SHARED / "lucas_oh_house_sales.csv"
    text = (ROOT / "models" / "lucas_county.toml").read_text()
    if n is not None:
        fr = pd.read_csv(src).sample(n, random_state=1).sort_values("id")
        data = folder / f"lucas_{n}.csv"
        fr.to_csv(data, index=False)
    else:
        data = src
    text = text.replace('path = "../../shared/data/lucas_oh_house_sales.csv"',
                        f'path = "{data}"')
    text = text.replace("n_implicates = 100", f"n_implicates = {L}")
    spec = folder / "spec.toml"
    spec.write_text(text)
    return spec


def case_argv(case: str, folder: Path, L: int) -> list[str]:
    """The synthgeo command line of a named case (its inputs written into ``folder``)."""
    out = ["--out", str(folder / "out")]
    if case == "bundled":
        from synthgeo.config import bundled_spec_path

        text = bundled_spec_path().read_text().replace('sampler = "nutpie"', 'sampler = "grid"')
        (folder / "spec.toml").write_text(text)
        return ["--quiet", "run", str(folder / "spec.toml"), *out]
    if case == "lucas":
        return ["--quiet", "run", str(_lucas_spec(folder, None, L)), *out]
    if case == "compare-2930":
        return ["--quiet", "compare", str(_lucas_spec(folder, 2930, L)), *out]
    if case == "paper-compare":
        return ["--quiet", "compare", str(ROOT / "models" / "paper_simulation.toml"), *out]
    if case in ("run-1e5", "run-3e5", "run-1e6"):
        n = {"run-1e5": 100_000, "run-3e5": 300_000, "run-1e6": 1_000_000}[case]
        subprocess.run([sys.executable, str(HERE / "simulate_design.py"), "--n", str(n),
                        "--out", str(folder)], check=True)
        return ["--quiet", "run", str(folder / "spec.toml"), *out]
    raise SystemExit(f"unknown case {case!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", nargs="?", help="bundled, lucas, paper-compare, compare-2930, "
                                            "run-1e5, run-3e5, run-1e6 (or give a synthgeo "
                                            "command "
                                            "after --)")
    ap.add_argument("--implicates", type=int, default=100, help="L (default 100)")
    ap.add_argument("--tracemalloc", type=int, default=0, metavar="N",
                    help="print the N largest allocation sites at the traced peak")
    if sys.argv[1:2] == ["--child"]:  # python bench_memory.py --child TOP SYNTHGEO-ARGS...
        child(sys.argv[3:], int(sys.argv[2]))
        return
    own, argv = sys.argv[1:], []
    if "--" in own:
        cut = own.index("--")
        own, argv = own[:cut], own[cut + 1:]
    a = ap.parse_args(own)
    case = (a.case or "command") + ("" if a.implicates == 100 else f"-L{a.implicates}") \
        + ("-tracemalloc" if a.tracemalloc else "")  # tracing slows the run: its own case
    rec = Record.start("bench_memory", case=case)
    with tempfile.TemporaryDirectory(prefix="synthgeo-mem-") as tmp:
        if a.case:
            argv = case_argv(a.case, Path(tmp), a.implicates)
        cmd = [sys.executable, __file__, "--child", str(a.tracemalloc), *argv]
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        text = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    lines = [x for x in text.splitlines() if x.startswith("PROFILE ")]
    if not lines:
        raise SystemExit(f"the command failed (status {status}):\n{text[-3000:]}")
    prof = json.loads(lines[-1][8:])
    cpu = usage.ru_utime + usage.ru_stime
    print(f"{a.case or ' '.join(argv)}: rc {prof['rc']}, wall {wall:.1f} s (process), "
          f"CPU {cpu:.1f} s, peak RSS {usage.ru_maxrss / 1024:,.0f} MB (ru_maxrss of the "
          f"whole process); load {os.getloadavg()[0]:.1f}")
    print(f"{'stage':28s} {'calls':>5s} {'seconds':>8s} {'CPU s':>8s} {'peak RSS MB':>12s}")
    for name, s in prof["stages"].items():
        peak = f"{s['peak_mb']:12,.0f}" if s["peak"] else f"{'(< 20 ms)':>12s}"
        print(f"{name:28s} {s['calls']:5d} {s['seconds']:8.1f} {s.get('cpu', 0.0):8.1f} {peak}")
    if "top" in prof:
        print(f"traced (tracemalloc) peak {prof['traced_peak_mb']:,.0f} MB; largest sites:")
        print("\n".join(prof["top"]))
    if prof["rc"] != 0:
        raise SystemExit(f"synthgeo exited with {prof['rc']}: no record written")
    goals = GOALS.get(case)  # the goals are for L = 100, untraced
    goal_wall, goal_rss = goals or (None, None)
    rec.figure("wall time (process)", round(wall, 1), "s", goal_max=goal_wall)
    rec.figure("CPU time (user + system)", round(cpu, 1), "s")
    rec.figure("peak RSS (ru_maxrss)", round(usage.ru_maxrss / 1024), "MiB", goal_max=goal_rss)
    rec.finish(detail={"synthgeo_argv": argv if not a.case else None, "implicates": a.implicates,
                       "stages": {k: {"calls": v["calls"], "seconds": round(v["seconds"], 2),
                                      "cpu_seconds": round(v.get("cpu", 0.0), 2),
                                      "peak_mib": round(v["peak_mb"])}
                                  for k, v in prof["stages"].items()}})


if __name__ == "__main__":
    main()
