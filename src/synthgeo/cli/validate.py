"""``synthgeo validate``: check a spec and its data without fitting."""

from __future__ import annotations

import argparse

from synthgeo.cli._spec import add_spec_arguments, spec_from_args, spec_label


def add_parser(sub, common) -> None:
    """Register ``synthgeo validate``."""
    v = sub.add_parser(
        "validate", parents=[common], help="check a spec and its data without fitting",
        description="Check a spec and its data without fitting: columns, NaN/text in numeric "
                    "columns, coordinates, CRS (projected to metres), prior overrides. Prints "
                    "the number of records and sites.",
    )
    add_spec_arguments(v, overrides=False)


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    from synthgeo.model.restricted_gp import default_priors
    from synthgeo.pipeline import prepare_data

    spec = spec_from_args(args)
    data = prepare_data(spec)
    default_priors(data.y, data.X, data.sites, **spec.model.priors)  # checks prior overrides
    say(f"OK: {spec_label(spec)}\n  {data.n_records} records at {data.sites.n_sites} sites, "
        f"CRS {data.gdf.crs.name}; response {spec.data.response!r}, covariates "
        f"{spec.data.covariates}; analyst's model {spec.formula!r}")
    if spec.data.sequential:  # [[data.responses]]: each response's family and formula
        from synthgeo.pipeline.responses import response_formula

        for j, rc in enumerate(spec.data.response_configs):
            say(f"  response {j + 1}: {rc.name!r} ({rc.family}); analyst's model "
                f"{response_formula(spec, rc, j == 0)!r}")
    if data.missing is not None:
        say(f"  {data.missing['n_dropped']} record(s) with a missing value dropped "
            f"(by column: {data.missing['by_column']})")
    say("  OK covers the spec and the data only: the location verdict, the posterior checks and "
        "the risk verdict are judged by `synthgeo run` (`synthgeo kanon` / `outliers` judge the "
        "locations alone, without fitting)")
    return 0
