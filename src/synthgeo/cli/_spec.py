"""Load a release spec and apply command-line overrides (shared by the spec-driven commands)."""

from __future__ import annotations

import argparse
from pathlib import Path

from synthgeo._errors import SpecError

# command-line option -> spec key, per spec section
OVERRIDES = {
    "sampling": (("draws", "draws"), ("tune", "tune"), ("chains", "chains"), ("seed", "seed"),
                 ("on_convergence_failure", "on_convergence_failure")),
    "synthesis": (("implicates", "n_implicates"),),
    # cli._options.SPEC_DATA / SPEC_ANONYMITY (issue 12)
    "data": (("coord_unit_m", "coord_unit_m"), ("accept_small_extent", "accept_small_extent")),
    "anonymity": (("treatment", "treatment"), ("on_location_failure", "on_location_failure")),
}


def spec_from_args(args: argparse.Namespace):
    """Load the spec named by ``args.spec`` (bundled when None) and apply overrides.

    Raises
    ------
    SpecError
        When the spec is invalid or an override is; the message names the option typed.
    """
    from synthgeo.config import bundled_spec_path, load_spec

    spec = load_spec(Path(args.spec) if args.spec else bundled_spec_path())
    for section, options in OVERRIDES.items():
        given = {key: (option, getattr(args, option)) for option, key in options
                 if getattr(args, option, None) is not None}
        if not given:
            continue
        try:  # one section at a time: its keys are checked together (chains vs stop/warn)
            spec = spec.replace(section, **{key: value for key, (_, value) in given.items()})
        except SpecError as exc:
            # name the option(s) the user typed whose key the message names
            named = [v for k, v in given.items() if f"] {k}`" in str(exc)] or list(given.values())
            flags = ", ".join(f"`--{o.replace('_', '-')} {v}`" for o, v in named)
            raise SpecError(f"{flags} is invalid: {exc}") from exc
    return spec
