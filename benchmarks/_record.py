"""Benchmark records: one JSON file per run under ``benchmarks/results/``.

``docs/performance.md`` is generated from these files by ``benchmarks/make_performance.py``
and from nothing else, so a figure reaches the performance page only by being measured by a
benchmark script that calls this module. A record says what was run and in what conditions:

- ``benchmark``: the script's name (``bench_job``), ``case``: what it ran (``grid``, ``lucas``);
- ``command``: the command line as typed, with the thread settings in the environment
  (``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_job.py --repeat 3``);
- ``date``: the start, UTC, ISO 8601 to the second;
- ``machine``: ``nproc`` (logical CPUs visible), ``memory_gib`` (MemTotal), ``cpu``, ``python``,
  ``platform``;
- ``load``: the 1-, 5- and 15-minute load averages at the ``start`` and at the ``end``;
- ``git``: the ``commit`` measured and whether the measured code (``src/``, ``models/``,
  ``pyproject.toml``) differed from it (``dirty``);
- ``figures``: a list of ``{"name", "value", "unit"}`` (the page prints these, nothing else),
  each optionally with a ``goal`` (``{"max": 15, "unit": "s"}``) the page checks;
- ``detail``: anything else the script measured (per-run times, stage seconds), kept, not
  printed.

Usage in a benchmark script::

    from _record import Record
    rec = Record.start("bench_job", case="grid")      # date, load, commit, machine
    ...                                               # the measurement
    rec.figure("wall time, median", 10.2, "s", goal_max=15)
    rec.finish(detail={"runs": walls})                # load at the end; writes the file

``SYNTHGEO_BENCH_RESULTS`` names another folder for the records (tests, trials); the default
is ``benchmarks/results/`` of this checkout.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

#: environment variables that change a timing and so belong to the command as run
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "MALLOC_ARENA_MAX")

#: keys every record has (make_performance.py refuses a record without one)
REQUIRED = ("benchmark", "case", "command", "date", "machine", "load", "git", "figures")


def replace_block(doc: Path, begin: str, end: str, block: str) -> None:
    """Replace the text from ``begin`` to ``end`` (markers included) in ``doc`` with ``block``.

    ``block`` carries the markers itself. A doc without both markers, in order, stops the
    script (SystemExit naming the doc and the marker): a generated block is never appended.
    """
    text = doc.read_text(encoding="utf-8")
    i = text.find(begin)
    j = text.find(end, i + len(begin)) if i >= 0 else -1
    if i < 0 or j < 0:
        raise SystemExit(f"{doc}: the markers {begin!r} … {end!r} are missing")
    doc.write_text(text[:i] + block + text[j + len(end):], encoding="utf-8")


def record_sources(records: dict[str, dict]) -> list[str]:
    """Return one line per record behind a docs block: its data sets, file, date, commit, load.

    ``records``: data set → ``{"record", "path", ...}`` (a ``newest_records`` of a benchmark);
    data sets measured by one record share its line.
    """
    seen: dict[str, list[str]] = {}
    for name, rec in records.items():
        seen.setdefault(rec["path"], []).append(name)
    out = []
    for path, names in seen.items():
        rec = records[names[0]]["record"]
        out.append(f"{', '.join(names)}: record `benchmarks/results/{Path(path).name}` "
                   f"({rec['date']}, commit {rec['git']['commit'][:7]}; `{rec['command']}`; "
                   f"load average {rec['load']['start'][0]:.2f} at the start, "
                   f"{rec['load']['end'][0]:.2f} at the end).")
    return out


def results_dir() -> Path:
    """Return the folder records go to: ``$SYNTHGEO_BENCH_RESULTS`` or ``benchmarks/results/``."""
    return Path(os.environ.get("SYNTHGEO_BENCH_RESULTS", RESULTS))


def command_line(argv: list[str] | None = None) -> str:
    """Return the command as typed: thread variables set in the environment, then ``python ARGV``.

    The script's path is written relative to the repository root when it lies inside it.
    """
    argv = list(sys.argv if argv is None else argv)
    if argv:
        script = Path(argv[0]).resolve()
        if script.is_relative_to(ROOT):
            argv[0] = str(script.relative_to(ROOT))
    env = [f"{k}={os.environ[k]}" for k in THREAD_VARS if k in os.environ]
    return " ".join([*env, "python", *(shlex.quote(a) for a in argv)])


def machine() -> dict:
    """Logical CPUs, total memory (GiB), CPU model, Python and platform of this machine."""
    mem = cpu = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 2**20, 1)
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:  # not Linux: the fields stay null rather than guessed
        pass
    return {"nproc": os.cpu_count(), "memory_gib": mem, "cpu": cpu,
            "python": platform.python_version(), "platform": platform.platform()}


#: what a benchmark measures: a change here, not yet committed, makes a record ``dirty``
MEASURED_PATHS = ("src", "models", "pyproject.toml")


def git_state() -> dict:
    """Return the commit checked out and whether the measured code differs from it (``dirty``)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                              text=True).stdout.strip()

    commit = git("rev-parse", "HEAD") or None
    dirty = bool(git("status", "--porcelain", "--", *MEASURED_PATHS)) if commit else None
    return {"commit": commit, "dirty": dirty}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@dataclass
class Record:
    """One benchmark run's record, started before the measurement and finished after it."""

    benchmark: str
    case: str
    command: str
    date: str
    machine: dict
    load_start: list[float]
    git: dict
    figures: list[dict] = field(default_factory=list)

    @classmethod
    def start(cls, benchmark: str, case: str = "default",
              argv: list[str] | None = None) -> Record:
        """Note the command, the date, the machine, the load and the commit, now."""
        now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
        return cls(benchmark=benchmark, case=case, command=command_line(argv),
                   date=now.strftime("%Y-%m-%dT%H:%M:%SZ"), machine=machine(),
                   load_start=_load(), git=git_state())

    def figure(self, name: str, value: float | int, unit: str, *,
               goal_max: float | None = None) -> None:
        """Add a figure the performance page prints (``goal_max``: the goal it must not pass)."""
        fig = {"name": name, "value": value, "unit": unit}
        if goal_max is not None:
            fig["goal"] = {"max": goal_max, "unit": unit}
        self.figures.append(fig)

    def finish(self, detail: dict | None = None) -> Path:
        """Note the load at the end and write the record; return its path.

        Raises
        ------
        ValueError
            When no figure was added (a record without figures would say nothing).
        """
        if not self.figures:
            raise ValueError(f"{self.benchmark}/{self.case}: no figure to record; call "
                             "Record.figure before finish")
        rec = {"benchmark": self.benchmark, "case": self.case, "command": self.command,
               "date": self.date, "machine": self.machine,
               "load": {"start": self.load_start, "end": _load()}, "git": self.git,
               "figures": self.figures, "detail": detail or {}}
        folder = results_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = self.date.replace("-", "").replace(":", "")
        path = folder / f"{self.benchmark}-{self.case}-{stamp}.json"
        path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"record: {path}", flush=True)
        return path
