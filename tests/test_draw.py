"""``synthgeo draw`` (issue 27 item 3): more implicates from a release's stored posterior.

A fitted release stores its fits' draws in ``confidential/synthesiser.nc`` (signed hash in
release.json); a draw takes draws no implicate used, refits nothing, is registered after the
release, reports the cumulative risk of the pooled implicates, and gives the same files for the
same seed. Reiter's rules over the old and new implicates agree with a release of as many
implicates from the same posterior, within Monte Carlo error. Bad input is refused in one line
with nothing written.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import synthgeo as sg
from synthgeo._errors import InputError, SpecError
from synthgeo.cli.main import main as cli_main
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.inference.stored import SYNTHESISER_FILE, load_synthesiser
from synthgeo.pipeline import run_release
from synthgeo.pipeline.draw import draw_release
from synthgeo.register import KEY_ENV, Ledger, ReleaseKey, open_register
from synthgeo.release.writer import write_release
from synthgeo.synthesis.implicates import implicate_draw_index
from synthgeo.testing import reiter_agreement

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

KEY = ReleaseKey(b"the agency's release key, 32+ bytes", source="test")


def _spec(seed: int, *, draws: int = 100, implicates: int = 10):
    """The bundled spec on the grid, small: 2 x `draws` posterior draws, L implicates."""
    spec = load_spec(bundled_spec_path())
    spec = spec.replace("sampling", chains=2, draws=draws, seed=seed)
    spec = spec.replace("utility", pmse_permutations=5)
    return spec.replace("synthesis", n_implicates=implicates)


def _registered(tmp: Path):
    """(ledger, result, folder): the bundled spec (seed 11) run, written and registered."""
    ledger = Ledger(open_register(tmp / "register.sqlite"), KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(_spec(11), ledger=ledger)
    return ledger, res, write_release(res, tmp / "a", ledger=ledger)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A signed, registered release of the bundled records: 2 x 100 draws, L = 10."""
    return _registered(tmp_path_factory.mktemp("draw"))


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """Another signed, registered release like ``first``, which ``drawn`` extends.

    A registered draw makes its release a link inside a chain, from which no second draw is
    allowed; ``first`` stays the chain's newest for the tests that draw from it repeatedly.
    """
    return _registered(tmp_path_factory.mktemp("chain"))


@pytest.fixture(scope="module")
def drawn(chain, tmp_path_factory):
    """Five more implicates drawn from ``chain`` (seed 12), written and registered."""
    ledger, _, out = chain
    res = draw_release(out, 5, seed=12, ledger=ledger)
    return res, write_release(res, tmp_path_factory.mktemp("drawn") / "b", ledger=ledger)


def test_a_run_stores_its_synthesiser_in_confidential_with_a_signed_hash(first):
    ledger, res, out = first
    rec = json.loads((out / "release.json").read_text())
    block = rec["synthesiser"]
    path = out / block["path"]
    assert block["path"] == f"confidential/{SYNTHESISER_FILE}" and path.is_file()
    assert not list((out / "release").rglob("*.nc"))  # never in release/
    from synthgeo.io.provenance import file_sha256
    from synthgeo.register import verify_record

    assert block["sha256"] == file_sha256(path) and verify_record(rec, KEY)
    stored = load_synthesiser(path)
    assert (block["n_draws"], block["n_used"], block["n_unused"]) == (200, 10, 190)
    assert block["drawn_from"] is None
    # the draws the implicates came from, ArviZ's names, both models, no per-record array
    used = np.flatnonzero(stored.used.ravel())
    np.testing.assert_array_equal(used, implicate_draw_index(2, 100, 10))
    np.testing.assert_array_equal(stored.of_release, stored.used)
    post = stored.posterior
    assert post["sigma2"].dims == ("chain", "draw", "model")
    assert list(post["model"].values) == ["unrestricted", "restricted"]
    assert "record" not in post.dims and "w" not in post  # grid: w drawn again from y
    for m in ("unrestricted", "restricted"):
        np.testing.assert_array_equal(stored.model_posterior(m)["beta"].values,
                                      res.fits[m].posterior["beta"].values)
    assert path.stat().st_size < 100_000


def test_a_draw_uses_fresh_draws_refits_nothing_and_reports_cumulative_risk(chain, drawn):
    ledger, res_a, out_a = chain
    res, out = drawn
    assert res.spec.synthesis.n_implicates == 5 and res.implicates["restricted"].sizes[
        "implicate"] == 5
    before = load_synthesiser(out_a / "confidential" / SYNTHESISER_FILE).used.ravel()
    after = load_synthesiser(out / "confidential" / SYNTHESISER_FILE).used.ravel()
    new = np.flatnonzero(after & ~before)
    assert new.size == 5 and (after >= before).all()  # the earlier draws stay used
    of_b = load_synthesiser(out / "confidential" / SYNTHESISER_FILE).of_release.ravel()
    np.testing.assert_array_equal(np.flatnonzero(of_b), new)
    src = res.implicates["restricted"]
    flat = src["source_chain"].values * 100 + src["source_draw"].values
    np.testing.assert_array_equal(np.sort(flat), new)  # from draws no implicate used before
    # no refit: the fits' draws are the stored ones, M and the at-risk set the release's
    for m in ("unrestricted", "restricted"):
        np.testing.assert_array_equal(res.fits[m].posterior["sigma2"].values,
                                      res_a.fits[m].posterior["sigma2"].values)
    assert res.M_m == res_a.M_m
    np.testing.assert_array_equal(res.at_risk.at_risk, res_a.at_risk.at_risk)
    # w at a draw both fits' seeds share is the original fit's (common random numbers)
    idx = np.array([3, 57])
    np.testing.assert_allclose(res.fits["restricted"].effects(idx),
                               res_a.fits["restricted"].effects(idx), rtol=1e-9, atol=1e-12)
    cum = res.cumulative
    assert cum.n_implicates_pooled == 15 and cum.n_linked == 140 and cum.n_new == 0
    rec = json.loads((out / "release.json").read_text())
    entry = ledger.register.by_release_json(
        __import__("synthgeo.io.provenance", fromlist=["x"]).file_sha256(out_a / "release.json"))
    assert rec["synthesiser"]["drawn_from"] == {
        "release_json_sha256": entry.release_json_sha256, "register_id": entry.id,
        "release_uid": entry.release_uid, "n_new_draws": 5, "refit": False}
    assert rec["previous_releases"]["n_implicates_pooled"] == 15
    assert rec["synthesiser"]["n_used"] == 15 and rec["n_implicates"] == 5
    readme = (out / "release" / "README.md").read_text()
    assert f"release `{entry.release_uid}`" in readme and "pool" in readme
    assert "further draws" not in (out_a / "release" / "README.md").read_text()
    frame = ledger.register.list()
    assert list(frame["previous_id"].fillna(0).astype(int))[-1] == entry.id


def test_the_same_seed_gives_the_same_files(first, tmp_path, monkeypatch):
    """Also with the land mask loaded or not: the release's land outcome is reused."""
    from synthgeo.io import where
    from synthgeo.pipeline import draw as draw_mod

    ledger, _, out_a = first
    outs, results = [], []
    for j in range(2):  # written unregistered: the register refuses a seed a second time
        with monkeypatch.context() as mp:
            if j == 0:  # the release's own file bytes: the land mask is not loaded
                def no_mask():
                    pytest.fail("the land mask was loaded")

                no_mask.cache_clear = lambda: None  # release_land_mask() after reading
                where._land_mask.cache_clear()
                mp.setattr(where, "_land_mask", no_mask)
            else:  # no outcome to reuse: the file is tested against the mask
                mp.setattr(draw_mod, "land_checked", lambda record: None)
            res = draw_release(out_a, 5, seed=21, ledger=ledger)
        results.append(res)
        outs.append(write_release(res, tmp_path / f"b{j}", ledger=Ledger(None, None)))
    files = sorted(p.relative_to(outs[0]).as_posix()
                   for p in (outs[0] / "release").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(outs[1]).as_posix()
                                     for p in (outs[1] / "release").rglob("*") if p.is_file())
    for f in [*files, f"confidential/{SYNTHESISER_FILE}"]:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    # another seed: other implicates from the same draws
    other = draw_release(out_a, 5, seed=22, ledger=ledger)
    a = other.implicates["restricted"]["y_synthetic"].values
    b = results[0].implicates["restricted"]["y_synthetic"].values
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(other.implicates["restricted"]["source_draw"].values,
                                  results[0].implicates["restricted"]["source_draw"].values)


def _no_output(tmp_path: Path) -> None:
    assert not (tmp_path / "out").exists()


def test_bad_requests_are_refused_in_one_line_with_nothing_written(first, tmp_path):
    ledger, _, out_a = first
    cases = [
        (lambda: sg.draw(tmp_path / "missing", 5), InputError, "no release folder there"),
        (lambda: draw_release(out_a, 0, ledger=ledger), SpecError, "integer >= 2"),
        (lambda: draw_release(out_a, 1, ledger=ledger), SpecError, "integer >= 2"),
        (lambda: draw_release(out_a, 2.5, ledger=ledger), SpecError, "integer >= 2"),
        (lambda: draw_release(out_a, 5, ledger=Ledger(None, KEY)), InputError, "--register"),
        (lambda: draw_release(out_a, 191, ledger=ledger), InputError, "--refit"),
        (lambda: draw_release(out_a, 5, seed=11, ledger=ledger), InputError, "seed"),
    ]
    for call, exc, words in cases:
        with pytest.raises(exc, match=words) as info:
            call()
        assert "\n" not in str(info.value)
    _no_output(tmp_path)


def test_a_tampered_release_or_synthesiser_is_refused(first, tmp_path):
    ledger, _, out_a = first
    # an edited signed release.json (more draws left, say): not the registered one
    edited = tmp_path / "edited"
    shutil.copytree(out_a, edited)
    rec = json.loads((edited / "release.json").read_text())
    rec["synthesiser"]["n_unused"] = 10_000
    (edited / "release.json").write_text(json.dumps(rec, indent=2))
    with pytest.raises(InputError, match="not in the register"):
        draw_release(edited, 5, ledger=ledger)
    # the stored synthesiser changed after release: its hash is in the signed record
    changed = tmp_path / "changed"
    shutil.copytree(out_a, changed)
    with open(changed / "confidential" / SYNTHESISER_FILE, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(InputError, match="does not match the SHA-256 in its signed"):
        draw_release(changed, 5, ledger=ledger)
    # a release with no stored synthesiser (written before synthgeo stored one)
    older = tmp_path / "older"
    shutil.copytree(out_a, older)
    (older / "confidential" / SYNTHESISER_FILE).unlink()
    with pytest.raises(InputError, match="holds no stored synthesiser") as info:
        draw_release(older, 5, ledger=ledger)
    assert "synthgeo run --previous" in str(info.value)
    # a signed release checked with another key
    other = Ledger(ledger.register, ReleaseKey(b"someone else's key, also 32 bytes!",
                                               source="test"))
    with pytest.raises(InputError, match="signed under key"):
        draw_release(out_a, 5, ledger=other)


def test_an_unsigned_release_is_not_called_signed(tmp_path):
    """Registered without a key (--allow-unsigned): a changed synthesiser's refusal says
    "unsigned release.json", not "signed"."""
    ledger = Ledger(open_register(tmp_path / "register.sqlite"), None, allow_unsigned=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(_spec(13, implicates=4), ledger=ledger)
        out = write_release(res, tmp_path / "u", ledger=ledger)
    rec = json.loads((out / "release.json").read_text())
    assert rec["signature"]["value"] is None
    with open(out / "confidential" / SYNTHESISER_FILE, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(InputError, match="SHA-256 in its unsigned release.json") as info:
        draw_release(out, 5, ledger=ledger)
    assert "signed release.json" not in str(info.value).replace("unsigned release.json", "")


def test_releases_a_draw_cannot_extend_are_refused_by_their_spec():
    from synthgeo.pipeline.draw import _draw_spec

    spec = load_spec(bundled_spec_path())
    cross = json.loads(json.dumps(spec.replace("synthesis", predictive="cross_fit").to_dict(),
                                  default=str))
    with pytest.raises(SpecError, match="cross-fitted"):
        _draw_spec({"spec": cross}, Path("x"), 5, None)
    several = json.loads(json.dumps(spec.to_dict(), default=str))
    several["data"]["responses"] = [{"name": "log_price", "family": "gaussian"},
                                    {"name": "baths", "family": "poisson"}]
    with pytest.raises(SpecError, match="one gaussian response only"):
        _draw_spec({"spec": several}, Path("x"), 5, None)
    ok = _draw_spec({"spec": json.loads(json.dumps(spec.to_dict(), default=str))}, Path("x"),
                    7, 5)
    assert ok.synthesis.n_implicates == 7 and ok.sampling.seed == 5
    with pytest.raises(SpecError, match=r"2001 implicates are more than the 2 × 1000 = 2000 "
                                        r"posterior draws its spec retains"):
        _draw_spec({"spec": json.loads(json.dumps(spec.to_dict(), default=str))}, Path("x"),
                   2001, 5)


def test_other_records_than_the_releases_are_refused(first, tmp_path):
    from synthgeo.inference.stored import StoredSynthesiser
    from synthgeo.pipeline.draw import stored_fitter

    _, res, out_a = first
    stored = load_synthesiser(out_a / "confidential" / SYNTHESISER_FILE)
    assert isinstance(stored, StoredSynthesiser)
    fit = stored_fitter(stored)
    d = res.data
    with pytest.raises(InputError, match="records differ"):
        fit(d.y + 1e-9, d.X, d.sites, priors=None, coef_names=d.coef_names, config=None,
            label="unrestricted")


def test_a_fit_that_stored_its_effects_is_drawn_from_them(tmp_path):
    """NUTS-like fits (w in the posterior; the fake fitter): w is stored and read back."""
    from synthgeo.testing import fake_fitter, fake_spec

    ledger = Ledger(open_register(tmp_path / "register.sqlite"), KEY)
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=5)
    res_a = run_release(spec.replace("sampling", seed=3), fitter=fake_fitter(n_draws=100),
                        ledger=ledger)
    out_a = write_release(res_a, tmp_path / "a", ledger=ledger)
    stored = load_synthesiser(out_a / "confidential" / SYNTHESISER_FILE)
    assert stored.posterior["w"].dims == ("chain", "draw", "model", "site")
    res = draw_release(out_a, 4, seed=4, ledger=ledger)
    src = res.implicates["restricted"]
    flat = src["source_chain"].values * 100 + src["source_draw"].values
    assert not np.isin(flat, implicate_draw_index(2, 100, 5)).any()
    for m in ("unrestricted", "restricted"):
        np.testing.assert_array_equal(res.fits[m].effects(flat), res_a.fits[m].effects(flat))
        np.testing.assert_array_equal(res.fits[m].scale, res_a.fits[m].scale)
    assert res.cumulative.n_implicates_pooled == 9


def test_cli_draw_refuses_used_up_draws_without_refit_and_bad_input(first, tmp_path, capsys,
                                                                    monkeypatch):
    ledger, _, out_a = first
    monkeypatch.setenv(KEY_ENV, KEY.secret.decode())
    reg = ["--register", ledger.register.location]
    out = ["--out", str(tmp_path / "out")]
    for argv, words in [
        ([str(out_a), "--implicates", "191", *reg, *out], "give --refit"),
        ([str(out_a), "--implicates", "0", *reg, *out], "--implicates must be an integer"),
        ([str(tmp_path / "nowhere"), "--implicates", "5", *reg, *out], "no release folder"),
    ]:
        assert cli_main(["draw", *argv]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
    _no_output(tmp_path)


def _implicates(out: Path) -> list[pd.DataFrame]:
    frame = pd.read_parquet(out / "release" / "implicates.parquet")
    return [g for _, g in frame.groupby("implicate")]


def check_reiter_agreement(out_a: Path, out_b: Path, out_c: Path, z: float = 4.0) -> dict:
    """Reiter's rules over a's and b's implicates against c's, within z Monte Carlo se.

    :func:`synthgeo.testing.reiter_agreement` on the spec's analyst model
    (log_price ~ sqft_living); the se treats the sets as independent (conservative).
    """
    out = reiter_agreement(_implicates(out_a) + _implicates(out_b), _implicates(out_c),
                           response="log_price", covariates=["sqft_living"])
    assert out["m"][0] == out["m"][1]
    for name in ("q_bar", "b_m", "u_bar", "T_p"):
        assert np.all(np.abs(out[name]["diff_in_se"]) <= z), (name, out[name])
    return out


def test_refit_when_the_draws_are_used_up_is_deterministic_for_a_seed(first, tmp_path, capsys,
                                                                     monkeypatch):
    """--refit: a new posterior from the stored state, scored, registered, said to be a refit.

    The command's refit is registered in a copy of the register (the fixture's release must
    stay the newest of its chain for the other tests); the API's, with the same seed, is
    written unregistered: the same files.
    """
    import sqlite3

    ledger, res_a, out_a = first
    n = 191  # 190 of the 200 draws are unused
    with pytest.raises(InputError, match="give --refit") as info:  # refused without it
        draw_release(out_a, n, seed=41, ledger=ledger)
    assert "\n" not in str(info.value)
    _no_output(tmp_path)
    with sqlite3.connect(ledger.register.location) as src, \
            sqlite3.connect(tmp_path / "copy.sqlite") as dst:
        src.backup(dst)  # the committed rows (a file copy can miss the write-ahead log)
    shutil.copytree(ledger.register.files_dir, tmp_path / "copy.sqlite.files")
    monkeypatch.setenv(KEY_ENV, KEY.secret.decode())
    out = tmp_path / "cli"
    assert cli_main(["--quiet", "draw", str(out_a), "--implicates", str(n), "--refit",
                     "--seed", "41", "--register", str(tmp_path / "copy.sqlite"),
                     "--out", str(out)]) == 0
    capsys.readouterr()
    res = draw_release(out_a, n, seed=41, ledger=ledger, refit=True)
    again = write_release(res, tmp_path / "api", ledger=Ledger(None, None))
    files = sorted(p.relative_to(out).as_posix() for p in (out / "release").rglob("*")
                   if p.is_file())
    assert files
    for f in [*files, f"confidential/{SYNTHESISER_FILE}"]:
        assert (out / f).read_bytes() == (again / f).read_bytes(), f
    # a new posterior (the fits' seed derived from 41), not the stored one
    assert not np.array_equal(res.fits["unrestricted"].posterior["beta"].values,
                              res_a.fits["unrestricted"].posterior["beta"].values)
    assert res.synthesiser.fit_seed != load_synthesiser(
        out_a / "confidential" / SYNTHESISER_FILE).fit_seed
    rec = json.loads((out / "release.json").read_text())
    drawn = rec["synthesiser"]["drawn_from"]
    assert drawn["refit"] is True and drawn["n_new_draws"] == n
    assert rec["n_implicates"] == n and rec["synthesiser"]["n_used"] == n  # its own draws
    assert rec["previous_releases"]["n_implicates_pooled"] == 10 + n  # scored as pooled
    assert "(a refit" in (out / "release" / "README.md").read_text()
    assert "refit: both models fitted again" in (out / "report.html").read_text()
    frame = open_register(tmp_path / "copy.sqlite").list()  # registered after its source
    assert list(frame["previous_id"].fillna(0).astype(int))[-1] == frame["id"].iloc[0]


def test_reiter_over_old_and_new_implicates_agrees_with_one_release(chain, drawn, tmp_path):
    """L = 10 + 5 vs a 15-implicate release from the same posterior (same fits' seed)."""
    _, _, out_a = chain
    _, out_b = drawn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(_spec(11, implicates=15))
    out_c = write_release(res, tmp_path / "c")
    for m in ("unrestricted", "restricted"):  # the same posterior
        np.testing.assert_array_equal(res.fits[m].posterior["beta"].values,
                                      chain[1].fits[m].posterior["beta"].values)
    check_reiter_agreement(out_a, out_b, out_c)


@pytest.mark.slow
def test_reiter_100_plus_50_agrees_with_150_on_the_bundled_spec(tmp_path):
    """The done-when check on the bundled spec as shipped (2 x 1000 draws, L = 100)."""
    ledger = Ledger(open_register(tmp_path / "register.sqlite"), KEY)
    spec = load_spec(bundled_spec_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_a = write_release(run_release(spec, ledger=ledger), tmp_path / "a", ledger=ledger)
        out_b = write_release(draw_release(out_a, 50, seed=7, ledger=ledger), tmp_path / "b",
                              ledger=ledger)
        out_c = write_release(run_release(spec.replace("synthesis", n_implicates=150)),
                              tmp_path / "c")
    check_reiter_agreement(out_a, out_b, out_c)


def test_a_second_draw_from_a_release_already_extended_is_refused(chain, drawn, tmp_path):
    """A draw from a release with a registered successor would reuse its unused draws."""
    ledger, _, out = chain
    with pytest.raises(InputError, match="already holds a release made after it"):
        draw_release(out, 5, seed=31, ledger=ledger)
    _, out_b = drawn
    res = draw_release(out_b, 5, seed=32, ledger=ledger)  # the newest of the chain: allowed
    used = set(drawn[0].implicates["restricted"]["source_draw"].values.tolist())
    assert not used & set(res.implicates["restricted"]["source_draw"].values.tolist())


def test_the_draw_modules_import_no_arviz_numba_dask_or_matplotlib():
    """ArviZ (numba compiling at import) cost ~1.5 s of a draw; dask and matplotlib load late.

    Importing the command and the draw's modules loads none of them (a fresh interpreter).
    """
    import subprocess
    import sys

    heavy = ("arviz", "numba", "dask", "matplotlib")
    code = ("import sys; import synthgeo.cli.main, synthgeo.pipeline.draw, "
            "synthgeo.release.writer; print([m for m in %r if m in sys.modules])" % (heavy,))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


@pytest.mark.slow
def test_the_draw_program_imports_neither_arviz_nor_numba(first, tmp_path):
    """A whole ``synthgeo draw`` loads neither ArviZ nor numba, and writes whole files.

    In a fresh interpreter, as the program runs, on a copy of the register (xarray loads dask
    itself, the report matplotlib).
    """
    import os
    import sqlite3
    import subprocess
    import sys

    ledger, _, out_a = first
    with sqlite3.connect(ledger.register.location) as src, \
            sqlite3.connect(tmp_path / "copy.sqlite") as dst:
        src.backup(dst)  # the fixture's release must stay the newest of its chain
    shutil.copytree(ledger.register.files_dir, tmp_path / "copy.sqlite.files")
    argv = ["--quiet", "draw", str(out_a), "--implicates", "3", "--seed", "51", "--register",
            str(tmp_path / "copy.sqlite"), "--out", str(tmp_path / "out")]
    # as the program runs (`python -m synthgeo`, so no collection at exit: synthgeo._gc)
    code = ("import atexit, runpy, sys; atexit.register(lambda: print([m for m in "
            "('arviz', 'numba') if m in sys.modules])); sys.argv = ['synthgeo', *%r]; "
            "runpy.run_module('synthgeo', run_name='__main__')" % (argv,))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, KEY_ENV: KEY.secret.decode()})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
    # every file written and whole: the release.json as registered, the report complete
    rec = json.loads((tmp_path / "out" / "release.json").read_text())
    assert rec["n_implicates"] == 3
    assert (tmp_path / "out" / "report.html").read_text().rstrip().endswith("</html>")


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """A release and a draw from it, both written with their reports (``write_result``)."""
    from synthgeo.release.writer import write_result

    tmp = tmp_path_factory.mktemp("reported")
    ledger = Ledger(open_register(tmp / "register.sqlite"), KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res_a = run_release(_spec(13), ledger=ledger)
        out_a = write_result(res_a, tmp / "a", ledger=ledger)
        res = draw_release(out_a, 5, seed=14, ledger=ledger)
        out = write_result(res, tmp / "b", ledger=ledger)
    return res_a, out_a, res, out


def _images(folder: Path) -> dict:
    import re

    html = (folder / "report.html").read_text(encoding="utf-8")
    return dict(re.findall(r"<img id='([\w-]+)' src='(data:image/png;base64,[^']+)'", html))


def test_a_drawn_report_reuses_the_earlier_figures_of_the_records_alone(reported):
    """At-risk map and spatial-k histogram: the earlier report's PNGs, which drawing them
    again gives byte for byte; the figures of the new implicates are drawn anew."""
    from synthgeo.release.report import _figures as F
    from synthgeo.release.report._common import coords_m
    from synthgeo.release.report._reuse import AT_RISK_MAP, SPATIAL_K, earlier_figures

    res_a, out_a, res, out = reported
    before, after = _images(out_a), _images(out)
    reused = earlier_figures(res)
    assert set(reused) == {AT_RISK_MAP, SPATIAL_K}
    for fig_id in (AT_RISK_MAP, SPATIAL_K):
        assert after[fig_id] == before[fig_id] == reused[fig_id]
    assert after["fig-histograms"] != before["fig-histograms"]
    ar = res.at_risk  # the reused bytes are what drawing the figure now gives
    fresh = F.to_data_uri(F.plot_record_map(coords_m(res), ar.at_risk, ar.radius_m,
                                            crs_name=res.data.gdf.crs.name))
    assert fresh == before[AT_RISK_MAP]
    assert earlier_figures(res_a) == {}  # a fitted release has no earlier report


def test_no_figure_is_reused_from_another_version_a_refit_or_another_m(reported,
                                                                         monkeypatch):
    import dataclasses

    import synthgeo.release.report._reuse as reuse

    _, _, res, _ = reported
    monkeypatch.setattr(reuse, "package_versions", lambda: {"synthgeo": "another"})
    assert reuse.earlier_figures(res) == {}
    monkeypatch.undo()
    refit = dataclasses.replace(res, synthesiser=dataclasses.replace(res.synthesiser,
                                                                     earlier_folder=None))
    assert reuse.earlier_figures(refit) == {}
    other_m = dataclasses.replace(res.at_risk, radius_m=res.at_risk.radius_m + 1.0)
    assert set(reuse.earlier_figures(dataclasses.replace(res, at_risk=other_m))) == {
        reuse.SPATIAL_K}
