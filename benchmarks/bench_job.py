"""Wall time of README's first command's job, `synthgeo run`, on the bundled example: grid vs NUTS.

Runs the CLI in a fresh process (imports included, as a user sees it) on the bundled spec
(grid route, the default) and on the same spec with ``[sampling] sampler = "nutpie"``, and
prints the whole job's wall time and the CLI's own stage seconds; ``--repeat`` runs each that
many times (the figures vary with the machine's load). Each route's runs are written as one
record in ``benchmarks/results/`` (``_record.py``: command, date, machine, load at start and
end, commit, figures), from which ``make_performance.py`` makes docs/performance.md.

Usage: python benchmarks/bench_job.py [--repeat 2] [--only grid|nutpie]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402

from synthgeo.config import bundled_spec_path  # noqa: E402

#: issue 13's goal for the bundled job, seconds of wall time with imports
GOAL_S = {"grid": 15}


def run_once(spec: Path, out: Path) -> tuple[float, float, str]:
    """Run the job once in a fresh process: wall seconds, CPU seconds (user + system), stages."""
    exe = Path(sys.executable).with_name("synthgeo")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([str(exe), "run", str(spec), "--out", str(out), "--overwrite",
                           "--progress", "never"], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stages = re.search(r"stage seconds: (.*)", proc.stdout + proc.stderr)
    return wall, cpu, stages.group(1) if stages else "?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=["grid", "nutpie"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bundled = bundled_spec_path()
        nuts = Path(tmp) / "sacramento_2bed_nuts.toml"
        nuts.write_text(bundled.read_text().replace('sampler = "grid"', 'sampler = "nutpie"'))
        (Path(tmp) / "sacramento_2bed_nuts.toml").touch()
        for name, spec in (("grid", bundled), ("nutpie", nuts)):
            if args.only and name != args.only:
                continue
            rec = Record.start("bench_job", case=name)
            runs = []
            for i in range(args.repeat):
                wall, cpu, stages = run_once(spec, Path(tmp) / f"out_{name}_{i}")
                load = os.getloadavg()[0]
                runs.append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                             "load": round(load, 2), "stages": stages})
                print(f"{name:<7} run {i + 1}: {wall:6.1f} s wall, {cpu:6.1f} s CPU (load "
                      f"{load:.1f}); stages: {stages}", flush=True)
            walls = [r["wall_s"] for r in runs]
            rec.figure(f"wall time, median of {len(walls)} runs", round(
                statistics.median(walls), 1), "s", goal_max=GOAL_S.get(name))
            rec.figure("wall time, fastest run", round(min(walls), 1), "s")
            rec.figure("wall time, slowest run", round(max(walls), 1), "s")
            rec.figure("CPU time (user + system), median", round(
                statistics.median(r["cpu_s"] for r in runs), 1), "s")
            rec.finish(detail={"runs": runs})


if __name__ == "__main__":
    main()
