"""Large cached draws are kept in a temporary file: the same doubles, nothing resident."""

import numpy as np
import pytest

from synthgeo import _spill
from synthgeo.config import SamplingConfig
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp


def test_spilled_array_reads_back_the_same_bytes_as_a_fresh_copy():
    a = np.random.default_rng(0).standard_normal((3, 5))
    s = _spill.spill(a, min_bytes=0)
    assert isinstance(s, _spill.Spilled) and "0." not in repr(s)  # no values in the repr
    b, c = s.load(), s.load()
    assert b.tobytes() == a.tobytes() and b is not c
    b[0, 0] = 99.0  # a caller's change does not reach the stored copy
    assert s.load().tobytes() == a.tobytes()
    assert _spill.spill(a) is a  # small: kept in memory as before


@pytest.mark.parametrize("gp", ["exact", "nngp"])
def test_grid_fit_effects_are_the_same_when_the_cache_spills(monkeypatch, gp):
    sim = simulate_gp(n=120, random_seed=4)
    sites = make_sites(sim["coords_m"])
    pri = default_priors(sim["y"], sim["X"], sites)
    flat = np.arange(0, 200, 10)

    def effects(threshold):
        monkeypatch.setattr(_spill, "SPILL_BYTES", threshold)
        fit = fit_gp_grid(sim["y"], sim["X"], sites, priors=pri, coef_names=["a", "b"],
                          config=SamplingConfig(sampler="grid", draws=100, seed=3), gp=gp)
        first, again = fit.effects(flat), fit.effects(flat)
        cached = fit.effect_sampler.__closure__
        held = [c.cell_contents for c in cached if isinstance(c.cell_contents, dict)
                and any(isinstance(k, tuple) for k in c.cell_contents)]
        return first, again, held[0][tuple(flat)]

    w, w_again, held = effects(0)  # every array spills
    assert isinstance(held, _spill.Spilled)
    assert w_again.tobytes() == w.tobytes() and w_again is not w
    w_mem, _, held_mem = effects(2**40)  # nothing spills: the old route
    assert isinstance(held_mem, np.ndarray)
    assert w.tobytes() == w_mem.tobytes()


def test_kept_predictive_reads_back_the_same_doubles(monkeypatch):
    from synthgeo.risk.predictive import Predictive, kept_predictive

    rng = np.random.default_rng(1)
    pred = Predictive(mean=rng.standard_normal((4, 6)), sd=rng.uniform(1, 2, (4, 6)),
                      name="baseline_loo")
    assert kept_predictive(pred)() is pred  # small: kept as it is
    monkeypatch.setattr(_spill, "SPILL_BYTES", 0)
    load = kept_predictive(pred)
    assert not any(c.cell_contents is pred for c in load.__closure__)  # the files, not pred
    got = load()
    assert got is not pred and got.name == "baseline_loo"
    assert got.mean.tobytes() == pred.mean.tobytes() and got.sd.tobytes() == pred.sd.tobytes()


@pytest.mark.slow
def test_a_release_that_spills_writes_the_same_files(tmp_path, monkeypatch):
    """Every spill on (threshold 0 bytes) against none: release/ and confidential/ identical."""
    import hashlib
    from pathlib import Path

    from synthgeo.cli.main import main

    root = Path(__file__).resolve().parents[1]
    spec = (root / "models" / "sacramento_all.toml").read_text()
    p = tmp_path / "s.toml"
    p.write_text(spec.replace('gp = "auto"', 'gp = "nngp"'))

    def files(threshold, name):
        monkeypatch.setattr(_spill, "SPILL_BYTES", threshold)
        out = tmp_path / name
        assert main(["run", str(p), "--out", str(out), "--draws", "200", "--implicates", "20",
                     "--quiet", "--progress", "never"]) == 0
        return {str(f.relative_to(out)): hashlib.sha256(f.read_bytes()).hexdigest()
                for d in ("release", "confidential") for f in sorted((out / d).rglob("*"))
                if f.is_file()}

    spilled, kept = files(0, "spilled"), files(2**40, "kept")
    assert spilled and spilled == kept


def test_run_cache_keeps_large_leave_out_entries_on_disk_and_serves_the_same_doubles(
        monkeypatch):
    from synthgeo.pipeline import loo_cache
    from synthgeo.risk.predictive import Predictive

    monkeypatch.setattr(_spill, "SPILL_BYTES", 0)
    rng = np.random.default_rng(2)
    made = []

    def compute(todo):
        made.append(sorted(todo))
        return {u: {"predictive": Predictive(mean=rng.standard_normal((3, 4)),
                                             sd=rng.uniform(1, 2, (3, 4))),
                    "own_weight": None, "log_density": rng.standard_normal((3, 4)),
                    "seconds": 0.5} for u in todo}

    fit, data = object(), object()
    draws = (np.arange(3), np.arange(3))
    blocks = {"record": np.arange(4)}
    with loo_cache.run_scope():
        first = loo_cache.cached_loo(fit, data, draws, blocks, compute)["record"]
        kept = loo_cache._ENTRIES[next(iter(loo_cache._ENTRIES))]["units"]["record"][1]
        assert isinstance(kept["log_density"], _spill.Spilled)  # on disk, not the array
        again = loo_cache.cached_loo(fit, data, draws, blocks, compute)["record"]
        assert made == [["record"]]  # served, not computed twice
        assert again["predictive"] is not first["predictive"]
        for k in ("mean", "sd"):
            assert (getattr(again["predictive"], k).tobytes()
                    == getattr(first["predictive"], k).tobytes())
        assert again["log_density"].tobytes() == first["log_density"].tobytes()
        assert again["own_weight"] is None and again["seconds"] == 0.5
        weight = rng.uniform(size=(3, 4))
        loo_cache.update_loo(fit, data, draws, "record", own_weight=weight)
        third = loo_cache.cached_loo(fit, data, draws, blocks, compute)["record"]
        assert third["own_weight"].tobytes() == weight.tobytes()


def test_a_full_temporary_folder_keeps_the_array_in_memory_with_one_warning(monkeypatch, caplog):
    import errno
    import logging

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_spill.tempfile, "TemporaryFile", full)
    monkeypatch.setattr(_spill, "_WARNED", False)
    a = np.arange(12.0)
    with caplog.at_level(logging.WARNING, logger="synthgeo"):
        assert _spill.spill(a, min_bytes=0) is a
        assert _spill.spill(a, min_bytes=0) is a
    lines = [r.getMessage() for r in caplog.records if "temporary file" in r.getMessage()]
    assert len(lines) == 1 and "TMPDIR" in lines[0] and "No space left" in lines[0]


def test_a_disk_that_fills_on_the_last_buffer_keeps_the_array_in_memory(monkeypatch):
    import errno
    import io

    class FullOnFlush(io.BytesIO):
        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_spill.tempfile, "TemporaryFile", lambda **kw: FullOnFlush())
    monkeypatch.setattr(_spill, "_WARNED", True)  # the warning is tested above
    a = np.arange(10.0)
    assert _spill.spill(a, min_bytes=0) is a  # not a Spilled that fails at load


def test_a_tmpdir_python_cannot_use_is_named_once(monkeypatch, caplog, tmp_path):
    import logging

    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    monkeypatch.setattr(_spill.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(_spill, "_TMPDIR_CHECKED", False)
    with caplog.at_level(logging.WARNING, logger="synthgeo"):
        _spill.spill(np.arange(4.0), min_bytes=0)
        _spill.spill(np.arange(4.0), min_bytes=0)
    lines = [r.getMessage() for r in caplog.records if "TMPDIR" in r.getMessage()]
    assert len(lines) == 1 and str(tmp_path) in lines[0]


@pytest.mark.parametrize("shape", [(5, 7), (1, 3), (4,), (3, 2, 4)])
def test_spilled_read_returns_each_selection_of_the_array(shape):
    """Rows, column spans, steps, negative steps and ints: the same values as in memory."""
    import itertools

    a = np.random.default_rng(0).normal(size=shape)
    kept = _spill.Spilled(a)
    keys = [slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
            slice(4, 1, -2), slice(2, 2), 0, 1, -1, slice(-3, None)]
    n = 0
    for key in itertools.product(keys, repeat=min(len(shape), 2)):
        try:
            want = a[key]
        except IndexError:
            continue
        got = kept.read(key)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), key
        n += 1
    assert n >= 10


def test_spill_variables_keeps_large_arrays_on_disk_and_reads_the_same_doubles():
    """Large contiguous variables become lazy; broadcast views and small arrays stay."""
    import copy
    import pickle

    import xarray as xr

    a = np.random.default_rng(1).normal(size=(4, 10))
    sd = np.broadcast_to(np.ones((4, 1)), (4, 10))
    ds = xr.Dataset({"y_synthetic": (("implicate", "record"), a),
                     "y_sd": (("implicate", "record"), sd), "small": ("record", np.ones(10))},
                    coords={"implicate": np.arange(4)}, attrs={"predictive": "posterior"})
    lazy = _spill.spill_variables(ds, min_bytes=100)
    assert lazy is not ds and lazy.identical(ds) and lazy.attrs == ds.attrs
    assert not isinstance(lazy["y_synthetic"].variable._data, np.ndarray)
    assert isinstance(lazy["y_sd"].variable._data, np.ndarray)
    assert isinstance(lazy["small"].variable._data, np.ndarray)
    assert lazy["y_synthetic"][:, 3:6].values.tobytes() == a[:, 3:6].tobytes()
    assert lazy.isel(implicate=2)["y_synthetic"].values.tobytes() == a[2].tobytes()
    assert lazy["y_synthetic"].transpose("record", "implicate").values.tobytes() == (
        a.T.copy().tobytes())
    got = lazy["y_synthetic"].values
    got[0, 0] = 99.0  # a fresh copy: the dataset's values do not change
    assert lazy["y_synthetic"].values[0, 0] == a[0, 0]
    for other in (copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert other["y_synthetic"].values.tobytes() == a.tobytes()
    assert "99" not in repr(lazy) and _spill.spill_variables(ds, min_bytes=10**9) is ds


@pytest.mark.slow
def test_a_tmpdir_python_cannot_use_reaches_release_json_and_the_report(monkeypatch, tmp_path):
    """Break-it trial 2026-12-08: an unusable TMPDIR moved the confidential spill files to the
    fallback folder with only a log line; it is a coded warning of the release now."""
    import warnings

    import synthgeo as sg
    from synthgeo.config import (
        AnonymityConfig,
        DataConfig,
        ModelConfig,
        ReleaseSpec,
        SamplingConfig,
    )
    from synthgeo.pipeline import run_release
    from synthgeo.release.report import render_report
    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import release_record
    from synthgeo.testing import fake_fitter, fake_spec

    spec = fake_spec(ReleaseSpec(data=DataConfig(response="log_price", id="id",
                                                 covariates=["sqft_living"]),
                                 model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=2),
                                 anonymity=AnonymityConfig(on_location_failure="warn")),
                     n_draws=150, n_implicates=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        points = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                                crs="EPSG:4326", id="id", query="beds == 2")

    def record():
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            result = run_release(spec, points=points.copy(), fitter=fake_fitter(n_draws=150))
        rec = release_record(result, seconds={})
        validate_release_record(rec)  # a record the schema refuses would write nothing
        return result, rec, [str(w.message) for w in said]

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # usable: said nowhere
    monkeypatch.setattr(_spill.tempfile, "gettempdir", lambda: str(tmp_path))
    assert _spill.tmpdir_not_used() is None
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    monkeypatch.setattr(_spill.tempfile, "gettempdir", lambda: str(tmp_path / "fallback"))
    result, rec, said = record()
    found = [w["message"] for w in rec["warnings"] if w["code"] == "tmpdir_not_used"]
    assert len(found) == 1 and f"go to {tmp_path / 'fallback'} instead" in found[0], found
    assert "set TMPDIR to a writable folder" in found[0] and found[0] in said
    import html

    assert found[0] in html.unescape(render_report(result))  # the report lists it


def test_spilled_read_of_one_column_reads_only_its_bytes(monkeypatch):
    """[:, i] reads L values, not the whole array (break-it: it read every byte)."""
    a = np.random.default_rng(2).normal(size=(20, 932))
    kept = _spill.Spilled(a)
    read = []
    real = _spill.os.preadv

    def counting(fd, buffers, offset):
        got = real(fd, buffers, offset)
        read.append(got)
        return got

    monkeypatch.setattr(_spill.os, "preadv", counting)
    for key, want in [((slice(None), 17), a[:, 17]), ((slice(None), -1), a[:, -1]),
                      ((slice(None), 5, ), a[:, 5]), ((3, 17), a[3, 17])]:
        read.clear()
        got = kept.read(key)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
        assert sum(read) == np.asarray(want).size * a.itemsize, key
