"""Warnings reached from the public API point at the user's line, not into synthgeo.

A fixed ``stacklevel`` was right for one call path only: the plausibility notes pointed into
``synthgeo/io/read.py`` when the data came from ``sg.read_points`` and into ``api.py`` from
``sg.synthesize``; the implicates' and risk warnings into ``pipeline``. ``synthgeo._warn``
attributes each to the first frame outside the package.
"""

from __future__ import annotations

import warnings

import synthgeo as sg
from synthgeo.config import bundled_spec_path, load_spec


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [w for w in caught if issubclass(w.category, UserWarning)]


def _where(caught) -> set[str]:
    return {f"{w.filename}: {str(w.message)[:40]}" for w in caught if w.filename != __file__}


def test_read_points_and_synthesize_warnings_point_at_the_callers_line(tmp_path):
    d = load_spec(bundled_spec_path()).data
    points, caught = _caught(lambda: sg.read_points(
        d.path, x=d.x, y=d.y, crs=d.crs, id=d.id, query=d.query, target_crs=d.target_crs,
        drop_duplicates=d.drop_duplicates))  # the file's one exact duplicate sale
    assert any("exact duplicate" in str(w.message) for w in caught)
    assert not _where(caught), _where(caught)
    homes = points.head(60)
    rel, caught = _caught(lambda: sg.synthesize(
        homes, response=d.response, covariates=d.covariates, id=d.id, implicates=3, seed=3,
        sampling=sg.SamplingConfig(sampler="grid"), model=sg.ModelConfig(gamma="inf"),
        anonymity=sg.AnonymityConfig(on_location_failure="warn")))
    said = " ".join(str(w.message) for w in caught)
    assert "only 3 implicates" in said and "location verdict FAIL" in said
    assert not _where(caught), _where(caught)
    _, caught = _caught(lambda: rel.write(tmp_path / "out"))  # unsigned, seed 3: a warning
    assert any("seed is small" in str(w.message) for w in caught)
    assert not _where(caught), _where(caught)
