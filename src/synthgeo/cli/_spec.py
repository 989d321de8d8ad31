"""The options of the spec-driven commands (run, compare, validate), declared once.

:func:`add_spec_arguments` registers the spec argument and the overrides of its keys;
:func:`spec_from_args` loads the spec and applies them (:data:`OVERRIDES` maps each option to
its ``[section] key``); :func:`add_output_arguments` registers ``--out``/``--overwrite``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from synthgeo._errors import SpecError

# command-line option -> spec key, per spec section
OVERRIDES = {
    "sampling": (("draws", "draws"), ("tune", "tune"), ("chains", "chains"), ("seed", "seed"),
                 ("on_convergence_failure", "on_convergence_failure")),
    "synthesis": (("implicates", "n_implicates"),),
    # the location keys (cli._options.SPEC_DATA / SPEC_ANONYMITY)
    "data": (("coord_unit_m", "coord_unit_m"), ("accept_small_extent", "accept_small_extent"),
             ("study_area", "study_area"), ("accept_offshore", "accept_offshore")),
    "anonymity": (("treatment", "treatment"), ("on_location_failure", "on_location_failure")),
    "compute": (("scheduler", "scheduler"),),
}

_OVERRIDE_HELP = {
    "draws": ("N", "posterior draws kept per chain (grid: independent draws per chain), "
                   "integer >= 10 (default: the spec's [sampling] draws; bundled spec: 1000)"),
    "tune": ("N", "NUTS only: warm-up (tuning) iterations per chain, discarded, integer >= 10 "
                  "(default: the spec's [sampling] tune; bundled spec: 1000)"),
    "chains": ("N", "NUTS: number of MCMC chains, integer >= 2 (R-hat compares chains; 1 only "
                    "with --on-convergence-failure warn); grid: its independent draws come in "
                    "this many groups (draws x chains in all; no R-hat, 1 allowed) (default: "
                    "the spec's [sampling] chains; bundled spec: 2)"),
    "seed": ("INT", "random seed, non-negative integer (default: the spec's [sampling] seed; "
                    "bundled spec: 20181); same spec + seed gives byte-identical files"),
    "implicates": ("L", "number L of synthetic data sets per model (Reiter's m), integer >= 2 "
                        "(default: the spec's [synthesis] n_implicates; bundled spec: 100)"),
}


def add_spec_arguments(p: argparse.ArgumentParser, *, overrides: bool = True) -> None:
    """Register the SPEC argument and the options that override its keys.

    The ``[data]`` location keys (coordinate unit, small extent) are always offered; with
    `overrides`, also the sampling, synthesis and ``[anonymity]`` ones.
    """
    from synthgeo.cli._options import add_spec_overrides

    p.add_argument("spec", nargs="?", default=None,
                   help="release spec (TOML); default: the bundled Sacramento example")
    add_spec_overrides(p, anonymity=overrides)
    if not overrides:
        return
    for option, (metavar, text) in _OVERRIDE_HELP.items():
        p.add_argument(f"--{option}", type=int, metavar=metavar, help=text)
    p.add_argument("--on-convergence-failure", choices=["stop", "warn"],
                   help="when a fit fails its checks (grid: largest cell or edge mass, "
                        "importance ESS, draws per chain; NUTS: R-hat > 1.01, divergences, low "
                        "ESS): stop "
                        "before writing anything, or warn and go on (default: the spec's "
                        "[sampling] on_convergence_failure; bundled spec: stop)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="address of a dask.distributed scheduler (e.g. tcp://10.0.0.5:8786) "
                        "that computes the grid's cells and the implicates; the files are the same "
                        "as without it "
                        "(default: the spec's [compute] scheduler; none: this process)")


def add_output_arguments(p: argparse.ArgumentParser, *, default: str | None, holds: str) -> None:
    """Register ``--out`` (`default`; the folder `holds` these files) and ``--overwrite``."""
    where = f"default: ./{default}" if default else "default: print only"
    p.add_argument("--out", default=default, metavar="DIR",
                   help=f"output folder ({where}); holds {holds}; must not exist (see "
                        "--overwrite) and must not contain the spec or its data file")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder of an earlier run of this command "
                        "(default: refuse)")


#: Where the bundled spec lies in a clone of the repository (README.md names it so).
MODELS_COPY = "models/sacramento_2bed.toml"


def spec_label(spec) -> str:
    """Name the spec a command runs as README.md does: the bundled one by its repository path.

    The bundled spec is read from the installed package (``src/synthgeo/data/...`` in an
    editable install, ``site-packages/...`` otherwise); README.md tells the user to edit
    ``models/sacramento_2bed.toml``, its byte-identical copy in the repository.

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> spec_label(load_spec(bundled_spec_path()))[:46]
    'the bundled spec (models/sacramento_2bed.toml '
    """
    from synthgeo.config import bundled_spec_path

    source = spec.source
    if source is not None and Path(source).resolve() == bundled_spec_path().resolve():
        return (f"the bundled spec ({MODELS_COPY} in the repository; to change it, pass an "
                "edited copy as SPEC)")
    return str(source)


def spec_from_args(args: argparse.Namespace):
    """Load the spec named by ``args.spec`` (bundled when None) and apply overrides.

    Raises
    ------
    SpecError
        When the spec is invalid or an override is; the message names the option typed.
    """
    from synthgeo.config import bundled_spec_path, load_spec

    spec = load_spec(Path(args.spec) if args.spec else bundled_spec_path())
    sections, typed = {}, {}
    for section, options in OVERRIDES.items():
        given = {key: (option, getattr(args, option)) for option, key in options
                 if getattr(args, option, None) is not None}
        if not given:
            continue
        typed.update(given)
        try:  # one section at a time: its keys are checked together (chains vs stop/warn)
            sections[section] = dataclasses.replace(
                getattr(spec, section), **{key: value for key, (_, value) in given.items()})
        except SpecError as exc:
            raise _invalid(given, exc) from exc
    if sections:
        try:  # then the sections together (draws vs n_implicates), on the final values only
            spec = dataclasses.replace(spec, **sections)
        except SpecError as exc:
            raise _invalid(typed, exc) from exc
    return spec


def _invalid(given: dict, exc: SpecError) -> SpecError:
    """Name the option(s) the user typed whose key the message names (else all typed)."""
    text = str(exc)
    named = [v for k, v in given.items() if f"] {k}`" in text or f"`{k}`" in text]
    flags = ", ".join(f"`--{o.replace('_', '-')} {v}`" for o, v in named or given.values())
    return SpecError(f"{flags} is invalid: {exc}")
