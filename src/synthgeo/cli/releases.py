"""``synthgeo releases``: list the release register, or back it up."""

from __future__ import annotations

import argparse


def add_parser(sub, common) -> None:
    """Register ``synthgeo releases``."""
    r = sub.add_parser(
        "releases", parents=[common], help="list the release register, or back it up",
        description="List every release in the register (number, uid, when, the release it "
                    "was pooled with, records, implicates, posterior draws as draws_per_chain x "
                    "chains = posterior_draws, signed, key id, release.json hash, folder); no "
                    "confidential value. With --backup, write a consistent "
                    "copy of a SQLite register and its files folder (SQLite online backup) "
                    "while runs may be writing.",
    )
    r.add_argument("--register", metavar="PATH",
                   help="the register: a SQLite file (*.sqlite, *.sqlite3 or *.db) or a "
                        "SQLAlchemy URL (default: $SYNTHGEO_REGISTER)")
    r.add_argument("--key-file", metavar="PATH",
                   help="the release key (default: $SYNTHGEO_RELEASE_KEY, else none): the "
                        "listing adds `this_key`, whether each release was signed under it "
                        "(yes / no: another key, which cannot verify or pool it / unsigned); "
                        "the key itself is never shown")
    r.add_argument("--backup", metavar="DEST",
                   help="write a copy of the register to the new SQLite file DEST (*.sqlite, "
                        "*.sqlite3 or *.db) and its files to DEST.files (default: no backup, "
                        "list only)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import os

    import pandas as pd

    from synthgeo._errors import InputError
    from synthgeo.register import REGISTER_ENV, load_key, open_register
    from synthgeo.register.store import sqlite_path

    where = args.register or os.environ.get(REGISTER_ENV)
    if not where:
        raise InputError(f"give --register PATH (or set {REGISTER_ENV}): the register to list")
    if "://" not in where and not sqlite_path(where).is_file():  # a link, a folder: refused
        raise InputError(f"--register {where!r}: no register there (a register is created by "
                         "the first `synthgeo run --register`)")
    key = load_key(args.key_file)  # before the register: a bad key file is refused first
    reg = open_register(where)
    if args.backup:
        dest = reg.backup(args.backup)
        print(f"backup of {reg.location}: {dest} (files: {dest}.files)")
        return 0
    frame = reg.list(key)
    say(f"register {reg.location}: {len(frame)} release(s)"
        + ("" if key is None else f"; this_key: signed under the key given (key id "
                                  f"{key.key_id}, from {key.source})"))
    if len(frame):
        say("posterior draws: draws_per_chain x chains = posterior_draws (the posterior each "
            "release's implicates were drawn from)")
        with pd.option_context("display.width", 200, "display.max_columns", 20,
                               "display.max_colwidth", 60):
            print(frame.to_string(index=False))
    return 0
