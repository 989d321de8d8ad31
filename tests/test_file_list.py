"""io.file_list.check_file_list: the one check of a folder's files against a list of digests.

Both the register's check of a release folder (``--previous``) and ``synthgeo verify``'s check
against release.json use it (they kept two copies of the loop before).
"""

from __future__ import annotations

import inspect

import pytest

from synthgeo.io.file_list import check_file_list
from synthgeo.io.provenance import file_sha256
from synthgeo.pipeline import previous
from synthgeo.register import store


def _folder(tmp_path):
    rel = tmp_path / "release"
    (rel / "csv").mkdir(parents=True)
    (rel / "a.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    (rel / "csv" / "b.csv").write_text("z\n3\n", encoding="utf-8")
    return [{"path": p.relative_to(tmp_path).as_posix(), "bytes": p.stat().st_size,
             "sha256": file_sha256(p)} for p in sorted(rel.rglob("*.csv"))]


def _check(tmp_path, files):
    check_file_list(tmp_path, files, listed_in="the list", refuse=ValueError)


def test_an_unchanged_folder_passes_and_every_change_is_refused(tmp_path):
    files = _folder(tmp_path)
    _check(tmp_path, files)
    a = tmp_path / "release" / "a.csv"
    a.write_text("x,y\n1,3\n", encoding="utf-8")  # same size, other bytes
    with pytest.raises(ValueError, match=r"^release/a.csv does not match the SHA-256 in the "
                                         r"list \(changed after release\)$"):
        _check(tmp_path, files)
    a.write_text("x,y\n1,2\n", encoding="utf-8")
    (tmp_path / "release" / "csv" / "b.csv").unlink()
    with pytest.raises(ValueError, match=r"^release/csv/b.csv is in the list but missing$"):
        _check(tmp_path, files)
    (tmp_path / "release" / "csv" / "b.csv").write_text("z\n3\n", encoding="utf-8")
    (tmp_path / "release" / "csv" / "c.csv").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^release/ holds files the list does not list: "
                                         r"\['release/csv/c.csv'\]$"):
        _check(tmp_path, files)
    (tmp_path / "confidential").mkdir()  # outside release/: not the list's business
    (tmp_path / "confidential" / "seed.txt").write_text("1\n", encoding="utf-8")
    (tmp_path / "release" / "csv" / "c.csv").unlink()
    _check(tmp_path, files)


def test_the_register_and_verify_use_the_one_check():
    for code in (inspect.getsource(store.Register.verify_folder),
                 inspect.getsource(previous.check_release_files)):
        assert "check_file_list(" in code and "rglob" not in code
