"""Every command's options: one shared declaration, and help that states defaults and units."""

from __future__ import annotations

import argparse

import pytest

from synthgeo.cli._options import MASKING, READING, SPEC_ANONYMITY, SPEC_DATA
from synthgeo.cli.main import _parser
from synthgeo.cli.registry import COMMANDS


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    p = _parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings
            if not isinstance(a, argparse._HelpAction)}


@pytest.mark.parametrize("command", [c.replace("_", "-") for c in COMMANDS])
def test_every_option_states_its_default_and_unit(command):
    parser = _subparsers()[command]
    for flag, action in _options(parser).items():
        text = " ".join((action.help or "").split())
        assert "default" in text.lower(), f"{command} {flag}: no default in {text!r}"
        if action.dest.endswith("_m"):
            assert "metre" in text, f"{command} {flag}: no unit (metres) in {text!r}"


def test_location_commands_share_one_declaration():
    subs = _subparsers()
    for command in ("kanon", "outliers", "mask", "choose-k"):
        opts = _options(subs[command])
        for key, (flag, kwargs) in READING.items():
            assert opts[flag].dest == key and opts[flag].help == kwargs["help"], (command, flag)
    for command in ("mask", "choose-k"):
        opts = _options(subs[command])
        assert opts["--verify"].help == MASKING["verify"][1]["help"]
    assert "--attacker-only" in _options(subs["choose-k"])
    for command, tables in (("run", (SPEC_DATA, SPEC_ANONYMITY)), ("validate", (SPEC_DATA,)),
                            ("compare", (SPEC_DATA, SPEC_ANONYMITY))):
        opts = _options(subs[command])
        for table in tables:
            for key, (flag, kwargs) in table.items():
                assert opts[flag].dest == key and opts[flag].default is None, (command, flag)


@pytest.mark.parametrize("command", ["kanon", "outliers"])
def test_points_commands_read_shipped_data(command, capsys):
    """`synthgeo:NAME` works for kanon/outliers as for mask/choose-k (it was 'does not exist')."""
    from synthgeo.cli.main import main

    args = ["synthgeo:chorley_ribble_cancer.csv", "--x", "x_km", "--y", "y_km", "--crs",
            "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id", "--k", "5"]
    extra = ["--radius-m", "100"] if command == "kanon" else ["--r-max-m", "2000"]
    assert main([command, *args, *extra]) == 0
    assert "chorley_ribble_cancer.csv: 1,036 records" in capsys.readouterr().out
