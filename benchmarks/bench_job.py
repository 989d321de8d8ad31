"""Wall time of README's first command's job, `synthgeo run`, on the bundled example: grid vs NUTS.

Runs the CLI in a fresh process (imports included, as a user sees it) on the bundled spec
(grid route, the default) and on the same spec with ``[sampling] sampler = "nutpie"``, and
prints the whole job's wall time and the CLI's own stage seconds; ``--repeat`` runs each that
many times (the figures vary with the machine's load: report `uptime` beside them).

Usage: python benchmarks/bench_job.py [--repeat 2] [--only grid|nutpie]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthgeo.config import bundled_spec_path


def run_once(spec: Path, out: Path) -> tuple[float, str]:
    exe = Path(sys.executable).with_name("synthgeo")
    t = time.perf_counter()
    proc = subprocess.run([str(exe), "run", str(spec), "--out", str(out), "--overwrite",
                           "--progress", "never"], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    stages = re.search(r"stage seconds: (.*)", proc.stdout + proc.stderr)
    return wall, stages.group(1) if stages else "?"


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
            for i in range(args.repeat):
                wall, stages = run_once(spec, Path(tmp) / f"out_{name}_{i}")
                load = os.getloadavg()[0]
                print(f"{name:<7} run {i + 1}: {wall:6.1f} s wall (load {load:.1f}); "
                      f"stages: {stages}", flush=True)


if __name__ == "__main__":
    main()
