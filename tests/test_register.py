"""The release register (issue 26, item 4): a register that cannot be fooled.

A fabricated earlier release (values shifted, hashes recomputed) and a reused seed with other
``--draws`` are refused; the cumulative risk is the largest of each release alone and pooled;
two writers at once serialise; a missing or wrong key is refused. The store tests run on SQLite
and, with ``SYNTHGEO_TEST_POSTGRES_URL``, on PostgreSQL (``SYNTHGEO_REQUIRE_POSTGRES=1`` makes
a missing URL a failure, as in CI).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import threading
import warnings
from pathlib import Path
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pytest

from synthgeo._errors import InputError
from synthgeo.cli.main import main as cli_main
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.io.provenance import file_sha256
from synthgeo.pipeline import run_release
from synthgeo.pipeline.previous import PreviousRelease, cumulative_risk
from synthgeo.register import (
    KEY_ENV,
    Ledger,
    NewRelease,
    ReleaseKey,
    make_ledger,
    open_register,
    seed_hash,
    sign_record,
    verify_record,
)
from synthgeo.register.schema import metadata
from synthgeo.release.writer import write_release
from synthgeo.testing import fake_fitter, fake_spec

pytestmark = pytest.mark.filterwarnings("ignore:1 exact duplicate row:UserWarning")

KEY = ReleaseKey(b"the agency's release key, 32+ bytes", source="test")
OTHER_KEY = ReleaseKey(b"someone else's key, also 32 bytes!", source="test")
PG_URL = os.environ.get("SYNTHGEO_TEST_POSTGRES_URL")


def _spec(seed: int | None, draws: int = 100):
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=draws, n_implicates=5)
    return spec.replace("sampling", seed=seed)


def _never_called(*args, **kwargs):
    raise AssertionError("fitted although the run should have been refused")


def _release(ledger, out, seed, previous=None, draws=100):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(_spec(seed, draws), fitter=fake_fitter(n_draws=draws),
                          previous=previous, ledger=ledger)
    return res, write_release(res, out, ledger=ledger)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A register (SQLite) holding release a (seed 1, draws 100), signed with KEY."""
    tmp = tmp_path_factory.mktemp("register")
    ledger = Ledger(open_register(tmp / "register.sqlite"), KEY)
    res, out = _release(ledger, tmp / "a", 1)
    return ledger, res, out


# --- the register as a store: SQLite and PostgreSQL ------------------------------------------

@pytest.fixture(params=["sqlite", "postgresql"])
def register(request, tmp_path):
    """An empty register on each backend (PostgreSQL: the CI server, tables dropped first)."""
    if request.param == "sqlite":
        return open_register(tmp_path / "register.sqlite")
    if not PG_URL:
        if os.environ.get("SYNTHGEO_REQUIRE_POSTGRES") == "1":
            pytest.fail("SYNTHGEO_REQUIRE_POSTGRES=1 but SYNTHGEO_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL (set SYNTHGEO_TEST_POSTGRES_URL)")
    from sqlalchemy import create_engine

    engine = create_engine(PG_URL)
    metadata.drop_all(engine)
    engine.dispose()
    return open_register(PG_URL, files_dir=tmp_path / "files")


def _new(i: int, *, seed: str | None = None, previous_id=None) -> NewRelease:
    return NewRelease(
        release_uid=f"{i:032x}", created_at="2026-12-03T00:00:00+00:00", folder=f"/r/{i}",
        release_json_sha256=f"{i:064x}", seed_hash=seed if seed is not None else f"{i:064x}",
        seed_hash_kind="hmac-sha256", signed=True, signature="a" * 64, key_id="b" * 16,
        unsigned_reason=None, spec={"sampling": {"draws": 100, "seed": None}}, n_records=140,
        n_implicates=5, n_draws=100, previous_id=previous_id, synthgeo_version="test",
        files=[{"path": "release/implicates.parquet", "bytes": 10, "sha256": "c" * 64}])


def test_register_holds_the_chain_files_and_refuses_a_second_use_of_a_seed(register):
    a = register.add(_new(1))
    b = register.add(_new(2), summary={"path": "predictive/x.parquet", "bytes": 5,
                                        "sha256": "d" * 64, "n_records": 140,
                                        "n_implicates": 5, "scale": "model scale"})
    c = register.add(_new(3, previous_id=b))
    assert [r.id for r in register.chain(c)] == [b, c] and a != b
    got = register.get(b)
    assert got.files[0]["sha256"] == "c" * 64 and got.summary["sha256"] == "d" * 64
    assert register.seed_used([f"{1:064x}"]).id == a
    with pytest.raises(InputError, match=f"seed was used by release {a}"):
        register.add(_new(4, seed=f"{1:064x}"))
    with pytest.raises(InputError, match="holds no release 99 to chain after"):
        register.add(_new(5, previous_id=99))
    frame = register.list()
    assert list(frame["id"]) == [a, b, c] and frame["previous_id"].iloc[2] == b


def test_a_new_register_is_made_by_its_first_release(register):
    """Opening and reading a new register writes nothing (SQLite: no file; a server: no
    table), so a run that fails leaves nothing; the first release creates it."""
    from sqlalchemy import inspect

    from synthgeo.register.schema import releases

    def exists() -> bool:
        if register.is_sqlite:
            return Path(register.engine.url.database).exists()
        return inspect(register.engine).has_table(releases.name)

    assert not exists()
    assert register.seed_used([seed_hash(7, None)]) is None and len(register.list()) == 0
    assert register.by_release_json("0" * 64) is None and not exists()
    rid = register.add(_new(1))
    assert exists() and register.get(rid).release_uid == _new(1).release_uid


def _add_many(location: str, files_dir: str, start: int, n: int) -> list[int]:
    reg = open_register(location, files_dir=files_dir)
    return [reg.add(_new(i)) for i in range(start, start + n)]


def test_two_concurrent_writers_serialise(register):
    """Two processes write 15 releases each into one register at once: 30 rows, none lost."""
    register.engine.dispose()  # no pooled connection crosses the fork (SQLAlchemy's advice)
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("fork")
                             ) as pool:
        jobs = [pool.submit(_add_many, register.location if register.is_sqlite else PG_URL,
                            str(register.files_dir), start, 15) for start in (100, 200)]
        ids = [i for j in jobs for i in j.result()]
    assert len(set(ids)) == 30 and len(register.list()) == 30
    # the same seed from two threads at once: exactly one is registered
    outcomes: list[object] = []

    def add(i):
        try:
            outcomes.append(register.add(_new(i, seed="e" * 64)))
        except InputError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in (300, 301)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(type(o).__name__ for o in outcomes) == ["InputError", "int"]


def _open_and_add_at_once(location: str, barrier, i: int) -> int | str:
    barrier.wait()  # every process connects to the new file at the same moment
    try:
        return open_register(location).add(_new(i))
    except InputError as exc:  # "database is locked" surfaces as the register's InputError
        return str(exc)


def test_new_register_created_by_several_processes_at_once(tmp_path):
    """Flaky before (break-it review, 2026-12-07): ``PRAGMA journal_mode=WAL`` answers
    "database is locked" at once, whatever the busy timeout, while another connection to a new
    file holds a lock; the switch now waits. 20 new registers, 6 processes each."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager, ProcessPoolExecutor(max_workers=6, mp_context=ctx) as pool:
        for trial in range(20):
            location = str(tmp_path / f"new{trial}.sqlite")
            barrier = manager.Barrier(6)
            out = list(pool.map(_open_and_add_at_once, [location] * 6, [barrier] * 6,
                                range(500, 506)))
            assert all(isinstance(o, int) for o in out), [o for o in out if isinstance(o, str)]
            assert len(open_register(location).list()) == 6


# --- the key -----------------------------------------------------------------------------------

def test_signature_verifies_only_under_its_key_and_unchanged():
    rec = {"n_records": 140, "seed_sha256": "0" * 64, "values": [1.5, None]}
    rec["signature"] = sign_record(rec, KEY)
    assert verify_record(rec, KEY) and not verify_record(rec, OTHER_KEY)
    assert not verify_record({**rec, "n_records": 141}, KEY)
    unsigned = {**rec, "signature": sign_record(rec, None, reason="--allow-unsigned")}
    assert not verify_record(unsigned, KEY)
    assert unsigned["signature"]["unsigned_reason"] == "--allow-unsigned"
    assert "the agency" not in repr(KEY)  # the key is never shown
    with pytest.raises(InputError, match="at least 16"):
        ReleaseKey(b"short", source="--key-file k")
    # the seed's hash is keyed: seed 1 cannot be found by hashing the integers
    assert seed_hash(1, KEY) != seed_hash(1, None) != seed_hash(1, OTHER_KEY)


def test_a_register_needs_a_key_or_allow_unsigned(tmp_path):
    with pytest.raises(InputError, match=f"set {KEY_ENV} or give --key-file"):
        make_ledger(tmp_path / "r.sqlite", environ={})
    ledger = make_ledger(tmp_path / "r.sqlite", allow_unsigned=True, environ={})
    assert ledger.key is None and "--allow-unsigned" in ledger.unsigned_reason
    keyfile = tmp_path / "release.key"
    keyfile.write_bytes(KEY.secret + b"\n")
    assert make_ledger(tmp_path / "r.sqlite", key_file=keyfile,
                       environ={}).key.key_id == KEY.key_id
    with pytest.raises(InputError, match="--previous reads the release register"):
        make_ledger(None, need_register=True, environ={})


def test_a_signed_release_is_checked_against_its_key(first, tmp_path):
    ledger, _, out_a = first
    rec = json.loads((out_a / "release.json").read_text())
    assert rec["signature"]["key_id"] == KEY.key_id and verify_record(rec, KEY)
    assert rec["seed_sha256"] == seed_hash(1, KEY)  # keyed, not sha256("1")
    assert rec["register"]["release_uid"] == ledger.register.get(1).release_uid
    reg = ledger.register
    with pytest.raises(InputError, match="no release key is given"):
        reg.verify_folder(out_a, None)
    with pytest.raises(InputError, match=f"signed under key {KEY.key_id}"):
        reg.verify_folder(out_a, OTHER_KEY)
    entry, _ = reg.verify_folder(out_a, KEY)
    assert entry.id == 1 and entry.n_draws == 100 and entry.signed
    # the signature block removed: another release.json, not the registered one
    copy = tmp_path / "nosig"
    shutil.copytree(out_a, copy)
    rec.pop("signature")
    (copy / "release.json").write_text(json.dumps(rec, indent=2))
    with pytest.raises(InputError, match="not in the register"):
        reg.verify_folder(copy, KEY)


# --- the break-it findings of issue 26 -------------------------------------------------------

def _fabricate(out_a, dest, shift: float = 2.0):
    """Copy release a, shift its released values by `shift` log units, recompute the hashes."""
    shutil.copytree(out_a, dest)
    p = dest / "release" / "implicates.parquet"
    frame = pd.read_parquet(p)
    frame["log_price"] = frame["log_price"] + shift
    frame.to_parquet(p, index=False)
    rec = json.loads((dest / "release.json").read_text())
    for f in rec["release_files"]:
        f["bytes"], f["sha256"] = (dest / f["path"]).stat().st_size, file_sha256(dest / f["path"])
    rec["signature"] = sign_record(rec, OTHER_KEY)  # the forger's own key
    (dest / "release.json").write_text(json.dumps(rec, indent=2))
    return dest, rec


def test_a_fabricated_earlier_release_is_refused(first, tmp_path):
    """Values shifted by 2 log units and hashes recomputed: refused before fitting."""
    ledger, _, out_a = first
    fake, rec = _fabricate(out_a, tmp_path / "fake")
    with pytest.raises(InputError, match="its release.json is not in the register") as exc:
        run_release(_spec(7), fitter=_never_called, previous=fake, ledger=ledger)
    assert "nothing was fitted" in str(exc.value) and "\n" not in str(exc.value)
    # the forger also writes the register (no key): the HMAC does not verify
    reg = ledger.register
    reg.add(NewRelease(
        release_uid="f" * 32, created_at=rec["created_at"], folder=str(fake),
        release_json_sha256=file_sha256(fake / "release.json"), seed_hash=None,
        seed_hash_kind="hmac-sha256", signed=True, signature=rec["signature"]["value"],
        key_id=KEY.key_id, unsigned_reason=None, spec=rec["spec"], n_records=140,
        n_implicates=5, n_draws=100, previous_id=None, synthgeo_version="forged",
        files=rec["release_files"]))
    with pytest.raises(InputError, match="HMAC does not verify"):
        run_release(_spec(7), fitter=_never_called, previous=fake, ledger=ledger)


def test_a_reused_seed_with_other_draws_is_refused(first, tmp_path, capsys):
    """One seed, one release: --seed 1 --draws 150 after release a (seed 1) is refused."""
    ledger, _, out_a = first
    with pytest.raises(InputError, match="seed was used by release 1"):
        run_release(_spec(1, draws=150), fitter=_never_called, ledger=ledger)
    with pytest.raises(InputError, match="seed was used by release 1"):
        run_release(_spec(1, draws=150), fitter=_never_called, previous=out_a, ledger=ledger)
    keyfile = tmp_path / "release.key"
    keyfile.write_bytes(KEY.secret)
    code = cli_main(["run", str(bundled_spec_path()), "--seed", "1", "--draws", "150",
                     "--register", reg_path(ledger), "--key-file", str(keyfile),
                     "--previous", str(out_a), "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code != 0 and "seed was used by release 1" in err and not (tmp_path / "b").exists()
    # an unkeyed earlier hash of the same seed is found too (a key added later)
    assert ledger.seed_hashes(1)[0] == seed_hash(1, None)


def reg_path(ledger) -> str:
    return ledger.register.location


def test_a_release_not_in_the_register_is_refused(first, tmp_path):
    """A genuine folder written without the register is not the register's word."""
    ledger, _, _ = first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(_spec(11), fitter=fake_fitter(n_draws=100))
    loose = write_release(res, tmp_path / "loose")  # unsigned, unregistered
    with pytest.raises(InputError, match="not in the register"):
        run_release(_spec(12), fitter=_never_called, previous=loose, ledger=ledger)


def test_cumulative_is_the_largest_of_each_release_and_pooled():
    """A protective second release lowers the pooled share; the board reads the worst."""
    spec = _spec(3)
    rng = np.random.default_rng(0)
    n, L = 40, 5
    y = 12.0 + rng.normal(0, 0.5, n)
    ids = np.arange(n)
    near = y + rng.normal(0, 0.001, (L, n))  # the earlier release: every value within 10 %
    far = y + 3.0  # this release: none within
    prev = PreviousRelease(path=".", record={}, release_json_sha256="0" * 64,
                           synthetic=pd.DataFrame(near.T, index=ids,
                                                  columns=np.arange(1, L + 1)))
    cum = cumulative_risk(prev, spec, y, ids, np.tile(far, (L, 1)), np.zeros(n, bool))
    row = cum.summary.query("group == 'all' and measure == 'rel:0.1'").iloc[0]
    assert row["mean_previous"] == 1.0 and row["mean_this"] == 0.0
    assert row["mean_cumulative"] == pytest.approx(0.5)  # pooled: below the earlier release
    assert row["mean_worst"] == 1.0 and row["worst_mean_of"] == "previous"
    assert row["attack_share_worst"] == max(row["attack_share_this"],
                                            row["attack_share_previous"],
                                            row["attack_share_cumulative"])
    for _, r in cum.summary.iterrows():  # every group and measure (at_risk: empty, NaN)
        members = [m for m in (r["mean_this"], r["mean_previous"], r["mean_cumulative"])
                   if not np.isnan(m)]
        assert r["mean_worst"] == max(members) if members else np.isnan(r["mean_worst"])


def test_second_release_is_chained_registered_and_shows_the_worst(first, tmp_path):
    ledger, _, out_a = first
    res_b, out_b = _release(ledger, tmp_path / "b", 2, previous=out_a)
    rec = json.loads((out_b / "release.json").read_text())
    chain = rec["previous_releases"]["chain"]
    assert chain[-1]["register_id"] == 1 and chain[-1]["signed"] is True
    rows = rec["previous_releases"]["cumulative_risk"]
    for row in rows:
        if row["n_records"]:
            assert row["mean_worst"] == max(row["mean_this"], row["mean_previous"],
                                            row["mean_cumulative"])
            # the pooled Rao-Blackwellised share, from the summaries beside the register
            assert row["rb_worst"] == max(row["rb_this"], row["rb_previous"],
                                          row["rb_cumulative"])
            assert min(row["rb_this"], row["rb_previous"]) <= row["rb_cumulative"] <= max(
                row["rb_this"], row["rb_previous"])
    entry = ledger.register.by_release_json(file_sha256(out_b / "release.json"))
    assert entry.previous_id == 1 and [e.id for e in ledger.register.chain(entry.id)][0] == 1
    # the predictive summaries beside the register, pointed to with their hash
    summ = ledger.register.read_summary(entry)
    assert summ.shape == (5 * 140, 4) and list(summ.columns) == ["record", "implicate", "mean",
                                                                 "sd"]
    np.testing.assert_allclose(
        summ["mean"].to_numpy().reshape(5, 140),
        res_b.implicates["restricted"]["y_mean"].transpose("implicate", "record").values)
    path = ledger.register.files_dir / entry.summary["path"]
    path.write_bytes(path.read_bytes() + b"x")  # changed after release
    with pytest.raises(InputError, match="do not match the SHA-256 in the register"):
        ledger.register.read_summary(entry)
    from synthgeo.release.report import section_neighbours

    assert "largest of the three" in section_neighbours(res_b).body


def test_an_unsigned_registered_release_says_so_and_needs_allow_unsigned_to_pool(tmp_path):
    ledger = Ledger(open_register(tmp_path / "r.sqlite"), None, allow_unsigned=True)
    _, out = _release(ledger, tmp_path / "u", 21)
    rec = json.loads((out / "release.json").read_text())
    assert rec["signature"]["algorithm"] is None
    assert "--allow-unsigned" in rec["signature"]["unsigned_reason"]
    strict = Ledger(ledger.register, KEY)
    with pytest.raises(InputError, match="registered unsigned; .* --allow-unsigned"):
        run_release(_spec(22), fitter=_never_called, previous=out, ledger=strict)


def test_releases_command_lists_and_backs_up(first, tmp_path, capsys):
    ledger, _, _ = first
    code = cli_main(["releases", "--register", reg_path(ledger)])
    out = capsys.readouterr().out
    assert code == 0 and "release_uid" in out and ledger.register.get(1).release_uid in out
    # draws labelled per chain and in total (a board member read n_draws as the total)
    assert "n_draws" not in out and "draws_per_chain x chains = posterior_draws" in out
    row = ledger.register.list().set_index("id").loc[1]
    sampling = json.loads(ledger.register.get(1).spec_json)["sampling"]
    assert (row["draws_per_chain"], row["chains"]) == (sampling["draws"], sampling["chains"])
    assert row["posterior_draws"] == sampling["draws"] * sampling["chains"] > row["chains"]
    dest = tmp_path / "backup.sqlite"
    assert cli_main(["releases", "--register", reg_path(ledger), "--backup", str(dest)]) == 0
    copy = open_register(dest)
    assert len(copy.list()) == len(ledger.register.list())
    # the files folder came along: a summary read from the backup checks out
    entry = next(copy.get(i) for i in copy.list()["id"] if copy.get(i).summary is not None)
    assert (copy.files_dir / entry.summary["path"]).is_file()
    assert cli_main(["releases", "--register", reg_path(ledger), "--backup", str(dest)]) != 0
    assert "exists" in capsys.readouterr().err


def test_releases_takes_the_key_file_as_run_and_draw_do(first, tmp_path, capsys, monkeypatch):
    """`synthgeo releases --key-file` is accepted: each release signed under it or not."""
    ledger, _, _ = first
    monkeypatch.delenv(KEY_ENV, raising=False)
    keys = {}
    for name, key in (("ours", KEY), ("theirs", OTHER_KEY)):
        keys[name] = tmp_path / f"{name}.key"
        keys[name].write_bytes(key.secret)
    assert cli_main(["releases", "--register", reg_path(ledger),
                     "--key-file", str(keys["ours"])]) == 0
    out = capsys.readouterr().out
    assert "this_key" in out and f"key id {KEY.key_id}" in out
    assert KEY.secret.decode() not in out  # the key itself is never shown
    frame = ledger.register.list(KEY)
    assert frame.loc[frame["id"] == 1, "this_key"].item() == "yes"
    assert set(ledger.register.list(OTHER_KEY)["this_key"]) <= {"no", "unsigned"}
    assert "this_key" not in ledger.register.list().columns  # no key: no column
    assert cli_main(["releases", "--register", reg_path(ledger),
                     "--key-file", str(tmp_path / "missing.key")]) == 1
    err = capsys.readouterr().err
    assert "--key-file" in err and len(err.strip().splitlines()) == 1


def test_releases_needs_a_register(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SYNTHGEO_REGISTER", raising=False)
    assert cli_main(["releases"]) != 0
    assert "give --register PATH" in capsys.readouterr().err
    assert cli_main(["releases", "--register", str(tmp_path / "none.sqlite")]) != 0
    assert "no register there" in capsys.readouterr().err


def test_a_failed_run_leaves_no_register_file(tmp_path, capsys, monkeypatch):
    """A run refused by a data check (a study area far away) creates no register file."""
    monkeypatch.delenv("SYNTHGEO_REGISTER", raising=False)
    reg = tmp_path / "register.sqlite"
    code = cli_main(["run", str(bundled_spec_path()), "--register", str(reg),
                     "--allow-unsigned", "--study-area=0,0,1,1", "--out", str(tmp_path / "o")])
    assert code == 1 and "study" in capsys.readouterr().err.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # opened, read and left alone: still no file; the first release creates it
    opened = open_register(reg)
    assert opened.seed_used([seed_hash(7, None)]) is None and len(opened.list()) == 0
    assert not reg.exists()
    rid = opened.add(_new(1))
    assert reg.is_file() and open_register(reg).get(rid).release_uid == _new(1).release_uid


@pytest.mark.parametrize("name", ["register.jsonl", "register", "register.csv"])
def test_a_register_path_of_another_kind_is_refused(name, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SYNTHGEO_REGISTER", raising=False)
    code = cli_main(["run", str(bundled_spec_path()), "--register", str(tmp_path / name),
                     "--allow-unsigned", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "--register" in err and ".sqlite" in err and ".db" in err and "postgresql" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    for ok in ("r.sqlite", "r.sqlite3", "r.DB"):
        assert len(open_register(tmp_path / ok).list()) == 0
    with pytest.raises(InputError, match="--backup .*SQLite file named"):
        open_register(tmp_path / "r.sqlite").backup(tmp_path / "copy.jsonl")


@pytest.mark.slow
def test_cli_run_signs_registers_and_pools(tmp_path, capsys, monkeypatch):
    """The command line end to end: a signed, registered release, then a repeated one."""
    text = bundled_spec_path().read_text(encoding="utf-8")
    text = text.replace("draws = 1000", "draws = 100").replace("n_implicates = 100",
                                                               "n_implicates = 5")
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    reg = tmp_path / "register.sqlite"
    monkeypatch.setenv(KEY_ENV, KEY.secret.decode())
    common = ["--register", str(reg), "--progress", "never", "--implicates", "5"]
    assert cli_main(["run", str(spec), "--seed", "31", "--out", str(tmp_path / "a"),
                     *common]) == 0
    out = capsys.readouterr().out
    assert f"register: release 1 in {reg}; release.json signed (HMAC-SHA256, key " \
           f"{KEY.key_id})" in out
    html = (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    assert f"release.json signed (HMAC-SHA256, key id {KEY.key_id}); registered in" in html
    assert cli_main(["run", str(spec), "--seed", "32", "--previous", str(tmp_path / "a"),
                     "--out", str(tmp_path / "b"), *common]) == 0
    assert "register: release 2 in" in capsys.readouterr().out
    frame = open_register(reg).list()
    assert list(frame["previous_id"].fillna(0).astype(int)) == [0, 1]
    rec = json.loads((tmp_path / "b" / "release.json").read_text())
    assert verify_record(rec, KEY) and rec["register"]["previous_uid"] == frame["release_uid"][0]


def test_an_edited_register_row_cannot_vouch_for_an_edited_file(first, tmp_path):
    """Break-it: a changed CSV whose new hash is written into the (unsigned) register row."""
    import shutil

    import sqlalchemy

    ledger, _, out_a = first
    import sqlite3

    copy_db = tmp_path / "register.sqlite"
    src, dst = sqlite3.connect(reg_path(ledger)), sqlite3.connect(copy_db)
    src.backup(dst)  # WAL mode: a file copy could miss the log
    src.close(), dst.close()
    shutil.copytree(Path(reg_path(ledger) + ".files"), Path(str(copy_db) + ".files"))
    edited = tmp_path / "a"
    shutil.copytree(out_a, edited)
    csv = edited / "release" / "csv" / "implicate_002.csv"
    csv.write_text(csv.read_text().replace("1", "2", 1))
    release_id = ledger.register.by_release_json(file_sha256(out_a / "release.json")).id
    engine = sqlalchemy.create_engine(f"sqlite:///{copy_db}")
    with engine.begin() as conn:
        assert conn.execute(sqlalchemy.text(
            "UPDATE synthgeo_release_files SET sha256 = :h, bytes = :b "
            "WHERE path = :p AND release_id = :i"),
            {"h": file_sha256(csv), "b": csv.stat().st_size,
             "p": "release/csv/implicate_002.csv", "i": release_id}).rowcount == 1
        conn.execute(sqlalchemy.text("UPDATE synthgeo_releases SET folder = :f WHERE id = :i"),
                     {"f": str(edited.resolve()), "i": release_id})
    engine.dispose()
    forged = Ledger(open_register(copy_db), KEY)
    with pytest.raises(InputError, match="differs from its release.json's"):
        run_release(_spec(8), fitter=_never_called, previous=edited, ledger=forged)


def test_overwrite_never_replaces_the_register_or_a_foreign_folder(tmp_path):
    """Break-it: --overwrite deleted a register kept inside the output folder, and any folder
    holding a file named release.json."""
    from synthgeo._errors import SpecError
    from synthgeo.io.atomic import check_output_dir

    out = tmp_path / "out"
    (out / "confidential").mkdir(parents=True)
    (out / "release.json").write_text("{}")
    (out / "thesis.txt").write_text("years of work")
    with pytest.raises(SpecError, match="not a synthgeo record"):
        check_output_dir(out, marker="release.json", overwrite=True)
    assert (out / "thesis.txt").read_text() == "years of work"
    # a register inside the output folder is an input the folder must not contain
    ledger = Ledger(open_register(out / "confidential" / "reg.sqlite"), KEY)
    ledger.register.add(_new(90))  # the register holds an earlier release: its file exists
    (out / "release.json").write_text('{"synthgeo_release_record": 1}')
    with pytest.raises(SpecError, match="contains the input"):
        _release(ledger, out, 11)
    assert (out / "confidential" / "reg.sqlite").is_file() and (out / "thesis.txt").is_file()


def test_an_unsigned_small_seed_is_warned_in_release_json_and_the_report(tmp_path):
    """Unsigned, seed_sha256 is an unkeyed hash: a seed below 2^32 is found by trying them all."""
    from synthgeo.release.writer import write_result

    def run(seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return run_release(_spec(seed), fitter=fake_fitter(n_draws=100))

    def codes(out):
        record = json.loads((out / "release.json").read_text(encoding="utf-8"))
        return [w["code"] for w in record["warnings"]], json.dumps(record["warnings"])

    res = run(123457)
    with pytest.warns(UserWarning, match=r"release.json is unsigned and the seed is small "
                                         r"\(below 2\^32\).*SYNTHGEO_RELEASE_KEY or --key-file"):
        out = write_result(res, tmp_path / "small", ledger=Ledger(None, None))
    found, text = codes(out)
    assert "small_unsigned_seed" in found and "123457" not in text
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "Warning: release.json is unsigned and the seed is small" in report
    assert "123457" not in report.split("release-signing")[1][:2000]
    with warnings.catch_warnings():  # signed, or a 128-bit seed: nothing to say of the hash
        warnings.filterwarnings("error", message="release.json is unsigned", category=UserWarning)
        warnings.filterwarnings("ignore", message="the seed is below 2", category=UserWarning)
        signed = write_release(res, tmp_path / "signed", ledger=Ledger(None, KEY))
        large = write_release(run(2**100 + 7), tmp_path / "large", ledger=Ledger(None, None))
    assert "small_unsigned_seed" not in codes(signed)[0] + codes(large)[0]


def test_a_searchable_seed_is_said_signed_or_not(tmp_path):
    """Break-it trial 2026-12-07: a seed below 2^64 is searched with one record's candidate
    values against the released row order; a key does not help, so signed releases say it
    too; a 128-bit seed does not."""
    from synthgeo.release.writer import write_result

    res = run_release(_spec(123457), fitter=fake_fitter(n_draws=100))
    with pytest.warns(UserWarning, match="the seed is below 2\\^64"):
        out = write_result(res, tmp_path / "signed", ledger=Ledger(None, KEY))
    record = json.loads((out / "release.json").read_text(encoding="utf-8"))
    assert "guessable_seed" in [w["code"] for w in record["warnings"]]
    assert "123457" not in json.dumps(record["warnings"])
    assert "the seed is below 2^64" in (out / "report.html").read_text(encoding="utf-8")


def test_a_second_input_noise_draw_of_the_same_values_is_refused(register):
    """One noise draw per record value: a release whose input noise covers a value already
    drawn for (another run, another seed) is refused in one line, nothing registered; the
    register keeps keyed fingerprints, never the bytes it was given."""
    import dataclasses

    from sqlalchemy import select

    from synthgeo.register.schema import noise_records
    fps = [f"log_price|{i}|0|{11.5 + i / 10:.9g}".encode() for i in range(2000)]
    register.add(dataclasses.replace(_new(1), noise_fingerprints=fps[:1500]))
    with pytest.raises(InputError, match="release 1 whose input noise already covers 500") as e:
        register.add(dataclasses.replace(_new(2), noise_fingerprints=fps[1000:]))
    assert "\n" not in str(e.value) and "11.5" not in str(e.value)
    assert len(register.list()) == 1  # nothing of the refused release
    register.add(dataclasses.replace(_new(3), noise_fingerprints=fps[1500:]))  # new values
    with register.engine.connect() as conn:
        keys = [r[0] for r in conn.execute(select(noise_records.c.record_key))]
    assert len(keys) == 2000 and all(len(k) == 64 for k in keys)
    assert not {k.encode() for k in keys} & set(fps)
    register.add(_new(4))  # no input noise: nothing to check


def test_register_refuses_a_second_noisy_run_of_the_bundled_sales(tmp_path):
    """End to end: the same sales under input noise twice, with two seeds, into one register."""
    target = {"measure": "rel:0.1", "max_attributable_record": 0.5}
    ledger = Ledger(open_register(tmp_path / "register.sqlite"), KEY)

    def noisy(seed):
        spec = _spec(seed).replace("risk", targets=[target], on_risk_failure="warn")
        return spec.replace("synthesis", predictive="cross_fit",
                            cross_fit_calibration="covariates", input_noise=0.3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(noisy(11), fitter=fake_fitter(n_draws=100), ledger=ledger)
        write_release(res, tmp_path / "a", ledger=ledger)
        # 139 distinct values: the bundled file has one exact duplicate row; refused before
        # anything is fitted (break-it review, 2026-12-07: it was refused at the write, after
        # the whole run)
        with pytest.raises(InputError, match="input noise already covers 139"):
            run_release(noisy(12), fitter=_never_called, ledger=ledger)
        # protect = "targets" reaches input noise at its third round: refused before the fit,
        # naming max_rounds; with max_rounds = 2 it never noises, and goes on to the fit
        protect = _spec(13).replace("risk", protect="targets", targets=[target])
        with pytest.raises(InputError, match=r"input noise already covers 139.*from round 3: "
                                             r"set `\[risk\] max_rounds = 2`"):
            run_release(protect, fitter=_never_called, ledger=ledger)
        with pytest.raises(AssertionError, match="fitted although"):
            run_release(protect.replace("risk", max_rounds=2), fitter=_never_called,
                        ledger=ledger)
        # the end-of-run check stays (two runs at once): the write still refuses
        res2 = run_release(noisy(12), fitter=fake_fitter(n_draws=100), ledger=Ledger(None, KEY))
        with pytest.raises(InputError, match="input noise already covers 139"):
            write_release(res2, tmp_path / "b", ledger=ledger)
    assert not (tmp_path / "b").exists()
    assert len(ledger.register.list()) == 1


# --- a register path that is not a register (break-it review, 2026-12-07) ----------------------

@pytest.mark.parametrize("kind", ["csv", "foreign_sqlite", "empty_sqlite"])
def test_an_existing_file_that_is_not_a_register_is_refused_untouched(tmp_path, kind, capsys,
                                                                      monkeypatch):
    """A CSV, another application's SQLite database, or one without tables: refused with one
    line, and the file's bytes (and its folder) stay as they were."""
    import sqlite3

    from synthgeo.register import store

    monkeypatch.setattr(store, "NEW_REGISTER_WAIT_S", 0.3)
    path = tmp_path / "register.db"
    if kind == "csv":
        path.write_text("id,price\n1,100\n2,200\n", encoding="utf-8")
    else:
        conn = sqlite3.connect(path)
        if kind == "foreign_sqlite":
            conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
            conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
        else:
            conn.execute("PRAGMA user_version = 7")  # a database file, no table
        conn.commit()
        conn.close()
    before = path.read_bytes()
    listing = sorted(p.name for p in tmp_path.iterdir())
    match = ("not a SQLite database" if kind == "csv"
             else "SQLite database without the register's tables")
    with pytest.raises(InputError, match=rf"--register .*register.db.* {match}.*a new file name"):
        open_register(path)
    assert cli_main(["releases", "--register", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a synthgeo register" in err[0], err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -wal, no files folder
    ledger_err = None
    try:
        Ledger(open_register(path), KEY)
    except InputError as exc:
        ledger_err = exc
    assert ledger_err is not None and path.read_bytes() == before


def test_an_existing_register_still_opens(first):
    ledger, _, _ = first
    again = open_register(reg_path(ledger))
    assert len(again.list()) >= 1
