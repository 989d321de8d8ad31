"""synthgeo._gc: the command runs with rarer full collections and restores the collector."""

from __future__ import annotations

import gc

import pytest

from synthgeo import _gc
from synthgeo._gc import FULL_COLLECTION_EVERY, fewer_full_collections
from synthgeo.cli import main as cli


def test_thresholds_are_raised_inside_and_restored_even_on_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_full_collections() as inside:
        assert gc.get_threshold() == inside == (before[0], before[1],
                                                max(before[2], FULL_COLLECTION_EVERY))
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_the_command_runs_under_them_and_gives_them_back(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(cli, "_main", lambda args: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert cli.main(["--version"]) == 0
    assert seen and seen[0][2] >= FULL_COLLECTION_EVERY
    assert gc.get_threshold() == before
    assert cli.main(["--no-such-option"]) == 2  # a usage error: restored as well
    assert gc.get_threshold() == before
    capsys.readouterr()


def test_only_the_program_skips_the_collection_at_exit(monkeypatch, capsys):
    registered = []
    monkeypatch.setattr(_gc.atexit, "register", registered.append)
    monkeypatch.setattr(_gc, "_at_exit", [])
    monkeypatch.setattr(cli, "_main", lambda args: 0)
    assert cli.main(["--version"]) == 0  # in-process, argv given: the caller's collector
    assert registered == []
    monkeypatch.setattr("sys.argv", ["synthgeo", "--version"])
    assert cli.main() == 0 and cli.main() == 0  # the program: registered once
    assert registered == [gc.freeze]
    capsys.readouterr()
