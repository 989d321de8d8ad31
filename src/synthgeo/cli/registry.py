"""Subcommands of the ``synthgeo`` command line, one module each.

Each module defines ``add_parser(sub, common)`` (register its argparse subparser; ``common``
is the parent parser holding ``--verbose``/``--quiet``) and ``run(args, say) -> int`` (do the
work; ``say`` prints unless ``--quiet``). Register a new module in :data:`COMMANDS`; the order
is the order of ``synthgeo --help``.
"""

from __future__ import annotations

COMMANDS: tuple[str, ...] = (
    "run",
    "draw",
    "validate",
    "mask",
    "choose_k",
    "kanon",
    "outliers",
    "compare",
    "releases",
    "verify",
)
