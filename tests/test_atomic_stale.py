"""A staging folder left by a killed run is named when the next run writes beside it."""

import pytest

from synthgeo.io.atomic import atomic_folder


def test_a_killed_runs_staging_folder_is_named_not_removed(tmp_path):
    out = tmp_path / "out"
    stale = tmp_path / ".out.tmp-abc123"
    (stale / "confidential").mkdir(parents=True)  # what SIGKILL leaves
    with pytest.warns(UserWarning, match=r"1 folder\(s\) beside out .*\.out\.tmp-abc123.*"
                                         r"confidential"):
        with atomic_folder(out) as tmp:
            (tmp / "a.txt").write_text("x")
    assert (out / "a.txt").exists() and stale.is_dir()  # another run may own it


def test_no_warning_without_leftovers(tmp_path, recwarn):
    with atomic_folder(tmp_path / "out") as tmp:
        (tmp / "a.txt").write_text("x")
    assert not [w for w in recwarn if "interrupted run" in str(w.message)]
