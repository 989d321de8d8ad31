"""Repeated releases: ``previous=DIR`` verifies against the register, links, pools, chains."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from synthgeo._errors import InputError
from synthgeo.cli.main import main as cli_main
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.io.provenance import file_sha256
from synthgeo.pipeline import run_release
from synthgeo.register import Ledger, NewRelease, ReleaseKey, open_register, sign_record
from synthgeo.release.writer import write_release
from synthgeo.testing import fake_fitter, fake_spec

pytestmark = pytest.mark.filterwarnings("ignore:1 exact duplicate row:UserWarning")

#: The release key of these tests (kept outside the register, as an agency's would be).
KEY = ReleaseKey(b"test key of test_previous_release", source="test")
#: The module's register (set by the ``first`` fixture).
LEDGER: list[Ledger] = []


def _spec(seed: int):
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=5)
    return spec.replace("sampling", seed=seed)


def _release(tmp_path, name: str, seed: int, previous=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(_spec(seed), fitter=fake_fitter(n_draws=100), previous=previous,
                          ledger=LEDGER[0])
    return res, write_release(res, tmp_path / name, ledger=LEDGER[0])


def _run(spec, previous, fitter=None):
    """run_release through the module's register (``_never_called`` by default)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_release(spec, fitter=fitter or _never_called, previous=previous,
                           ledger=LEDGER[0])


def _register_as_is(folder):
    """Sign and register an edited copy (a release the board did register with that record)."""
    reg = LEDGER[0].register
    rec = json.loads((folder / "release.json").read_text())
    rec.pop("signature", None)
    rec["signature"] = sign_record(rec, KEY)
    (folder / "release.json").write_text(json.dumps(rec))
    reg.add(NewRelease(
        release_uid=f"{len(reg.list()) + 1:032x}", created_at=rec["created_at"],
        folder=str(folder), release_json_sha256=file_sha256(folder / "release.json"),
        seed_hash=None, seed_hash_kind="hmac-sha256", signed=True,
        signature=rec["signature"]["value"], key_id=KEY.key_id, unsigned_reason=None,
        spec=rec["spec"], n_records=rec["n_records"], n_implicates=rec["n_implicates"],
        n_draws=None, previous_id=None, synthgeo_version="test", files=rec["release_files"]))
    return folder


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("previous")
    LEDGER[:] = [Ledger(open_register(tmp / "register.sqlite"), KEY)]
    return (tmp, *_release(tmp, "a", 1))


def test_second_release_pools_the_first_and_records_the_chain(first, tmp_path):
    _, res_a, out_a = first
    res_b, out_b = _release(tmp_path, "b", 6, previous=out_a)
    cum = res_b.cumulative
    assert (cum.n_linked, cum.n_new, cum.n_implicates_pooled) == (140, 0, 10)
    # equal L: the pooled share is the mean of the two releases' shares, record by record
    ra = res_a.risk["restricted"].per_record["risk_rel"].values
    rb = res_b.risk["restricted"].per_record["risk_rel"].values
    np.testing.assert_allclose(cum.cumulative.per_record["risk_rel"].values, (ra + rb) / 2)
    np.testing.assert_allclose(cum.this.per_record["risk_rel"].values, rb)
    row = cum.summary.query("group == 'all' and measure == 'rel:0.1'").iloc[0]
    assert row["mean_cumulative"] == pytest.approx(((ra + rb) / 2).mean())
    # the pooled average attack uses all 10 implicates
    assert 0.0 <= row["attack_share_cumulative"] <= 1.0
    rec = json.loads((out_b / "release.json").read_text())
    prev = rec["previous_releases"]
    assert len(prev["chain"]) == 1
    entry = prev["chain"][0]
    assert entry["release_json_sha256"] == file_sha256(out_a / "release.json")
    a_files = json.loads((out_a / "release.json").read_text())["release_files"]
    assert entry["release_files"] == [{"path": f["path"], "sha256": f["sha256"]}
                                      for f in a_files]
    assert {r["group"] for r in prev["cumulative_risk"]} == {"all", "at_risk", "other"}
    per = pd.read_csv(out_b / "confidential" / "cumulative_risk_per_record.csv")
    assert len(per) == 140 and "share[rel:0.1]_cumulative" in per.columns
    # the board reads it in the report too
    from synthgeo.release.report import section_neighbours

    html = section_neighbours(res_b).body
    assert "table-cumulative-risk" in html and "1 earlier release(s)" in html


@pytest.mark.slow
def test_a_third_release_carries_the_chain_forward(first, tmp_path):
    _, _, out_a = first
    _, out_b = _release(tmp_path, "b", 4, previous=out_a)
    res_c, out_c = _release(tmp_path, "c", 5, previous=out_b)
    assert [c["release_json_sha256"] for c in res_c.cumulative.chain] == [
        file_sha256(out_a / "release.json"), file_sha256(out_b / "release.json")]
    rec = json.loads((out_c / "release.json").read_text())
    assert len(rec["previous_releases"]["chain"]) == 2
    # the pooled figures leave out release a: said where the board reads it (break-it finding)
    assert [w["code"] for w in rec["warnings"]].count("cumulative_partial") == 1
    # a seed of any release in the chain is refused, not only the last one's (break-it finding)
    with pytest.raises(InputError, match="seed was used by release 1 of the register"):
        _run(_spec(1), out_c)


def _never_called(*args, **kwargs):
    raise AssertionError("fitted although the earlier release was refused")


@pytest.mark.parametrize("tamper, message", [
    ("change", r"release/implicates\.parquet does not match the SHA-256 in the register"),
    ("remove", r"release/README\.md is in the register but missing"),
    ("add", r"release/ holds files the register does not list: \['release/extra\.csv'\]"),
])
def test_a_changed_earlier_release_is_refused_before_fitting(first, tmp_path, tamper,
                                                            message):
    import shutil

    _, _, out_a = first
    copy = tmp_path / "a_copy"
    shutil.copytree(out_a, copy)
    if tamper == "change":
        p = copy / "release" / "implicates.parquet"
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0xFF
        p.write_bytes(bytes(data))
    elif tamper == "remove":
        (copy / "release" / "README.md").unlink()
    else:
        (copy / "release" / "extra.csv").write_text("id\n1\n")
    with pytest.raises(InputError, match=message) as exc:
        _run(_spec(9), copy)
    assert "nothing was fitted" in str(exc.value) and "\n" not in str(exc.value)


def test_previous_needs_a_release_folder_and_the_same_id_column(first, tmp_path):
    _, _, out_a = first
    with pytest.raises(InputError, match="no release.json there"):
        _run(_spec(9), tmp_path)
    spec = _spec(9).replace("data", id=None)
    with pytest.raises(InputError, match=r"set `\[data\] id`"):
        _run(spec, out_a)
    # the register decides: no register, no --previous
    with pytest.raises(InputError, match=r"--previous reads the release register"):
        run_release(_spec(9), fitter=_never_called, previous=out_a)


def test_previous_with_the_earlier_seed_is_refused(first):
    """New-user finding: the same seed re-issued identical implicates and pooled them as 2 L."""
    _, _, out_a = first
    with pytest.raises(InputError, match=r"seed was used by release 1 of the register") as exc:
        _run(_spec(1), out_a)
    assert "\n" not in str(exc.value) and "give a new seed (`--seed N`" in str(exc.value)


def test_an_edited_seed_hash_is_refused_by_the_register(first, tmp_path):
    """Break-it: zeroing the earlier release.json's seed_sha256 let the same seed through."""
    import shutil

    _, _, out_a = first
    copy = tmp_path / "edited"
    shutil.copytree(out_a, copy)
    rec = json.loads((copy / "release.json").read_text())
    rec["seed_sha256"] = "0" * 64
    (copy / "release.json").write_text(json.dumps(rec))
    with pytest.raises(InputError, match="its release.json is not in the register"):
        _run(_spec(9), copy)
    with pytest.raises(InputError, match="seed was used by release 1"):  # the register's word
        _release(tmp_path, "again", 1, previous=out_a)
    assert not (tmp_path / "again").exists()


def test_previous_with_other_columns_scale_or_location_treatment_is_refused(first):
    """Break-it: a different spec was accepted (a synthesised column could be released real)."""
    _, _, out_a = first
    spec = _spec(9)
    with pytest.raises(InputError, match=r"`\[data\] covariates` is \['sqft_living'\]"):
        _run(spec.replace("data", covariates=[]).replace("utility", formula="log_price ~ 1"),
             out_a)
    with pytest.raises(InputError, match=r"`\[data\] responses` .* same columns on the same"):
        _run(spec.replace("data", transform="log", response="price_usd").replace(
            "utility", formula="log(price_usd) ~ sqft_living"), out_a)


def test_previous_after_an_applied_location_treatment_needs_the_same_anonymity(first, tmp_path):
    import shutil

    _, _, out_a = first
    copy = tmp_path / "applied"
    shutil.copytree(out_a, copy)
    rec = json.loads((copy / "release.json").read_text())
    rec["spec"]["anonymity"]["treatment"] = "apply"
    (copy / "release.json").write_text(json.dumps(rec))
    with pytest.raises(InputError, match="not in the register"):  # edited: refused
        _run(_spec(9), copy)
    with pytest.raises(InputError, match=r"differs in \['treatment'\]"):  # as registered
        _run(_spec(9), _register_as_is(copy))


def _edited(out_a, tmp_path, name, edit):
    import shutil

    copy = tmp_path / name
    shutil.copytree(out_a, copy)
    rec = json.loads((copy / "release.json").read_text())
    edit(rec)
    (copy / "release.json").write_text(json.dumps(rec))
    return _register_as_is(copy)


def test_previous_after_apply_needs_the_same_records_and_a_sequential_transform_counts(
        first, tmp_path):
    """Break-it: a wider query after an applied treatment published moved records exactly; a
    [[data.responses]] release's own transform was not compared (pooled log with dollars)."""
    _, _, out_a = first

    def applied_other_frame(rec):
        rec["spec"]["anonymity"]["treatment"] = "apply"
        rec["input"]["frame_sha256"] = "0" * 64

    with pytest.raises(InputError, match="this release's records differ"):
        _run(_spec(9).replace("anonymity", treatment="apply"),
             _edited(out_a, tmp_path, "applied", applied_other_frame))

    def sequential_log(rec):
        rec["spec"]["data"]["responses"] = [{"name": "log_price", "family": "gaussian",
                                             "transform": "log"}]

    with pytest.raises(InputError, match="responses' family and transform"):
        _run(_spec(9), _edited(out_a, tmp_path, "seq", sequential_log))


def test_cli_previous_refuses_a_tampered_release(first, tmp_path, capsys):
    import shutil

    _, _, out_a = first
    copy = tmp_path / "a_copy"
    shutil.copytree(out_a, copy)
    (copy / "release" / "README.md").write_text("edited")
    key = tmp_path / "release.key"
    key.write_bytes(KEY.secret)
    code = cli_main(["run", str(bundled_spec_path()), "--previous", str(copy), "--register",
                     str(LEDGER[0].register.location), "--key-file", str(key),
                     "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code != 0 and "README.md does not match the SHA-256 in the register" in err
    assert not (tmp_path / "b").exists()


def test_targets_are_judged_on_the_pooled_implicates_too(first, tmp_path):
    """Issue 11, item 9: a_i(pooled) = pooled share − this release's baseline b_i; gate applies."""
    from synthgeo._errors import RiskError
    from synthgeo.config import RiskTarget
    from synthgeo.risk.attributable import _per_record

    _, res_a, out_a = first
    target = RiskTarget(measure="rel:0.1", attack="share", max_attributable_record=0.99,
                        record_threshold=0.2, max_share_above=1.0)
    spec = _spec(9).replace("risk", targets=[target], on_risk_failure="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec, fitter=fake_fitter(n_draws=100), previous=out_a,
                          ledger=LEDGER[0])
    v = res.cumulative.verdict
    assert v.cumulative and v.status == "PASS"
    # by hand: pooled Rao-Blackwellised share minus b_i = release_i − a_i of this release;
    # the pooled r̃ is the L-weighted mean of each release's own r̃ (the earlier one's from
    # the predictive summaries the register points to; L = 5 each)
    rr = res.risk_scores.summary.records["restricted"]
    a = res.risk_scores.summary.record_attributable("restricted", "rel:0.1", "share")
    release_b = _per_record(rr, "rel:0.1", "share", "release")
    release_a = _per_record(res_a.risk_scores.summary.records["restricted"], "rel:0.1",
                            "share", "release")
    rb = res.cumulative.rb["rel:0.1"]
    np.testing.assert_allclose(rb["this"], release_b, rtol=1e-12)
    np.testing.assert_allclose(rb["previous"], release_a, rtol=1e-9)
    pooled = (release_a + release_b) / 2
    np.testing.assert_allclose(rb["cumulative"], pooled, rtol=1e-9)
    want = pooled - (release_b - a)  # same record order: every record is linked
    assert v.checks[0].value == pytest.approx(float(want.max()))
    assert v.checks[1].n_above == int((want > 0.2).sum())
    rec = json.loads((write_release(res, tmp_path / "c") / "release.json").read_text())
    assert rec["previous_releases"]["verdict"]["cumulative"] is True
    # a target no release meets stops the run before anything is written (this release's own gate
    # fires first; the pooled gate uses the same apply_risk_gate)
    strict = RiskTarget(measure="rel:0.1", attack="share", max_attributable_record=0.0)
    stop = _spec(9).replace("risk", targets=[strict], on_risk_failure="stop")
    with pytest.raises(RiskError), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        run_release(stop, fitter=fake_fitter(n_draws=100), previous=out_a, ledger=LEDGER[0])


def test_a_pooled_failure_says_it_is_the_pooled_figure(first):
    """Break-it finding: the stop message named no cumulative figure."""
    from synthgeo._errors import RiskError
    from synthgeo.config import RiskTarget
    from synthgeo.pipeline.risk_stage import gate_cumulative

    _, _, out_a = first
    # pooled Rao-Blackwellised max a_i ≈ 0.09 here (the pooled check has no Monte Carlo bound,
    # this release's own has: its upper bound ≈ 0.46 at L = 5), so a limit of 0.01 fails both;
    # under "warn" both verdicts are FAIL, and the pooled one's gate names the pooled figure
    target = RiskTarget(measure="rel:0.1", attack="share", max_attributable_record=0.01)
    spec = _spec(2).replace("risk", targets=[target], on_risk_failure="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec, fitter=fake_fitter(n_draws=100), previous=out_a,
                          ledger=LEDGER[0])
    assert res.cumulative.verdict.status == "FAIL" and res.cumulative.verdict.cumulative
    stop = spec.replace("risk", on_risk_failure="stop")
    with pytest.raises(RiskError, match=r"^cumulative \(pooled with the earlier releases\)"):
        gate_cumulative(stop, res.risk_scores, res.cumulative.verdict)
    warned = gate_cumulative(spec, res.risk_scores, res.cumulative.verdict)
    assert any(w["message"].startswith("cumulative (pooled") for w in warned.warnings)


def test_previous_with_the_seed_in_its_seed_file_is_refused(first, tmp_path):
    """Review: only the hashes were compared; the earlier folder's confidential/seed.txt was not.

    A registered release whose register row and release.json hold no usable hash of its seed
    (a row without one; a hash under another key) let the same seed through: the same
    implicates again, pooled as new ones.
    """
    import shutil

    _, _, out_a = first
    copy = tmp_path / "nohash"
    shutil.copytree(out_a, copy)
    rec = json.loads((copy / "release.json").read_text())
    rec["seed_sha256"] = "0" * 64  # no hash that gives the seed away
    (copy / "release.json").write_text(json.dumps(rec))
    _register_as_is(copy)  # registered without a seed hash
    (copy / "confidential" / "seed.txt").write_text("987654321\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^--previous .*: this run's seed is the earlier "
                                         r"release's \(its confidential/seed.txt\).*`--seed N`"
                       ) as exc:
        _run(_spec(987654321), copy)
    assert "\n" not in str(exc.value) and "987654321" not in str(exc.value)
