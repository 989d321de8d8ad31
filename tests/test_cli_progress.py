"""Command line: every option's help states its default; progress bars on stderr, when wanted."""

from __future__ import annotations

import argparse

import pytest

from synthgeo._progress import progress_iter
from synthgeo.cli.main import _parser, main, progress_enabled


def _all_parsers():
    top = _parser()
    yield "synthgeo", top
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((f"synthgeo {name}", p) for name, p in action.choices.items())


def test_every_option_states_its_default():
    checked = 0
    for prog, parser in _all_parsers():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if action.required:
                continue  # a required argument has no default to state
            text = " ".join((action.help or "").split())
            assert "default" in text, f"{prog} {action.option_strings or action.dest}: {text!r}"
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize(("progress", "quiet", "tty", "want"), [
    ("auto", False, True, True), ("auto", True, True, False), ("auto", False, False, False),
    ("always", True, False, True), ("never", False, True, False),
])
def test_progress_enabled(progress, quiet, tty, want):
    assert progress_enabled(progress, quiet=quiet, stderr_tty=tty) is want


def test_progress_flag_after_the_subcommand(capsys):
    args = _parser().parse_args(["validate", "--progress", "never"])
    assert args.progress == "never"
    assert _parser().parse_args(["--progress", "always", "validate"]).progress == "always"
    assert main(["validate", "--progress", "sometimes"]) == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err


def test_progress_bar_goes_to_stderr_only_when_enabled(capsys):
    assert list(progress_iter(range(5), enabled=True, desc="synthesis")) == list(range(5))
    out, err = capsys.readouterr()
    assert out == "" and "synthesis" in err and "/5" in err
    assert list(progress_iter(range(5), enabled=False, desc="risk")) == list(range(5))
    assert capsys.readouterr() == ("", "")


def test_version_lists_report_dependencies(capsys):
    assert main(["--version"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    for dep in ("matplotlib", "tqdm", "jsonschema", "numba", "h5netcdf"):
        assert dep in names
