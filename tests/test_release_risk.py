"""The risk stage in the release (issue 11).

Baselines and attributable risk, the verdict and its gate, the confidential risk file,
`transform = "log"` end to end, and the seed kept out of release/. Fast: the fake fitter
(synthgeo.testing) replaces sampling.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synthgeo._errors import RiskError
from synthgeo._seed import SEED_FILE, seed_sha256
from synthgeo.config import RiskTarget, bundled_spec_path, load_spec
from synthgeo.pipeline import run_release
from synthgeo.pipeline.risk_stage import RISK_FAILED_CODE, score_release_risk
from synthgeo.release.writer import release_frames, write_release
from synthgeo.testing import fake_fitter, fake_spec

N_DRAWS, L = 100, 10


def _run(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_release(spec, fitter=fake_fitter(n_draws=N_DRAWS, random_seed=0))


def _spec(**sampling):
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=N_DRAWS, n_implicates=L)
    return spec.replace("sampling", **sampling) if sampling else spec


@pytest.fixture(scope="module")
def fresh_seed_result():
    """Run the bundled spec without a seed: a fresh random one."""
    return _run(_spec(seed=None))


@pytest.fixture(scope="module")
def written(fresh_seed_result, tmp_path_factory):
    out = tmp_path_factory.mktemp("risk") / "out"
    write_release(fresh_seed_result, out, report_html="<!-- CONFIDENTIAL -->\n<html></html>")
    return out


# --- the risk stage -------------------------------------------------------------------------


def test_risk_stage_scores_both_models_both_baselines_every_measure(fresh_seed_result):
    r = fresh_seed_result
    t = r.risk_scores.table
    assert set(t["model"]) == {"unrestricted", "restricted"}
    assert set(t["group"]) == {"all", "at_risk", "other"}
    assert set(t["measure"]) == {"abs:10000", "rel:0.1"}
    assert set(t["attack"]) == {"share", "average"}
    share = t[t["attack"] == "share"]
    # attributable = release - the chosen baseline, the same baseline for both models
    np.testing.assert_allclose(share["attributable"], share["release"] - share["baseline"])
    for _, g in share.groupby(["measure"]):  # one b* per measure and attack, every group
        assert g["baseline_source"].nunique() == 1
        chosen = g["baseline_source"].iloc[0]
        other = "public" if chosen == "loo" else "loo"
        on_all = g[g["group"] == "all"]  # chosen on all records, by its mean over the models
        assert (on_all[f"baseline_{chosen}"].mean()
                >= on_all[f"baseline_{other}"].mean() - 1e-12)
    # the LOO baseline comes from the unrestricted fit: the same for both models
    loo = share.pivot_table(index=["measure", "group"], columns="model", values="baseline_loo")
    np.testing.assert_allclose(loo["unrestricted"], loo["restricted"])
    assert "risk_baselines" in r.seconds and r.seconds["risk_baselines"] > 0
    # no targets: NOT ASSESSED, never PASS
    assert r.risk_scores.verdict.status == "NOT ASSESSED"


def test_rao_blackwellised_risk_is_the_expected_share(fresh_seed_result):
    """Check the realised share scatters around r̃ = E[share | draws].

    Over 280 record-measures the means differ by Monte Carlo noise only (sd ≈ 0.007, L = 10).
    """
    rr = fresh_seed_result.risk_scores.records["unrestricted"].per_record
    share, rb = rr["share"].values, rr["release"].values
    assert abs(share.mean() - rb.mean()) < 0.035
    assert np.corrcoef(share.ravel(), rb.ravel())[0, 1] > 0.3


def _with_targets(result, on_risk_failure, **target):
    spec = result.spec.replace(
        "risk", targets=[RiskTarget(measure="rel:0.1", attack="share", **target)],
        on_risk_failure=on_risk_failure)
    return score_release_risk(spec, result.data, result.fits, result.implicates,
                              result.at_risk.at_risk, result.locations)


def test_failed_target_stops_or_warns(fresh_seed_result):
    with pytest.raises(RiskError, match="nothing was written"):
        _with_targets(fresh_seed_result, "stop", max_attributable_record=0.0)
    with pytest.warns(UserWarning, match="disclosure-risk targets failed"):
        scores = _with_targets(fresh_seed_result, "warn", max_attributable_record=0.0,
                               record_threshold=0.0, max_share_above=1.0)
    assert scores.verdict.status == "FAIL"
    assert [w["code"] for w in scores.warnings] == [RISK_FAILED_CODE]
    statuses = {c.criterion: c.status for c in scores.verdict.checks}
    assert statuses == {"max_attributable_record": "FAIL", "max_share_above": "PASS"}
    joint = scores.joint.to_dict()
    assert joint["n_joint"] <= min(joint["n_identifiable"], joint["n_above"])
    assert "FAIL" in scores.verdict_line() and "joint:" in scores.verdict_line()
    passed = _with_targets(fresh_seed_result, "stop", max_attributable_record=1.0)
    assert passed.verdict.status == "PASS"


def test_stop_raises_before_anything_is_written(tmp_path):
    spec = _spec().replace("risk", targets=[RiskTarget(measure="rel:0.1",
                                                       max_attributable_record=0.0)])
    with pytest.raises(RiskError):
        _run(spec)  # run_release writes nothing; the writer is never reached
    assert not any(tmp_path.iterdir())


# --- release.json, confidential/, release/ ----------------------------------------------------


def test_release_record_holds_verdict_attributable_table_and_seed_hash(written,
                                                                        fresh_seed_result):
    rec = json.loads((written / "release.json").read_text())
    assert rec["verdicts"]["risk"]["status"] == "NOT ASSESSED"
    assert rec["verdicts"]["risk"]["targets"] == []
    table = pd.DataFrame(rec["risk_attributable"]["table"])
    assert len(table) == len(fresh_seed_result.risk_scores.table)
    assert rec["seed_sha256"] == seed_sha256(fresh_seed_result.seed)
    assert rec["spec"]["sampling"]["seed"] is None and "seed" not in rec
    # the board's record, labelled so (new-user finding: nothing said release.json is not public)
    assert rec["classification"].startswith("confidential: ")
    assert not (written / "release" / "release.json").exists()


def test_confidential_risk_file_has_every_figure_of_both_models(written):
    per = pd.read_csv(written / "confidential" / "risk_per_record.csv")
    assert list(per.columns[:3]) == ["id", "at_risk", "n_neighbours_within_M"]  # data's id
    for model in ("unrestricted", "restricted"):
        for var in ("share", "release", "release_se", "loo", "loo_se", "public", "public_se"):
            assert f"{var}[rel:0.1]_{model}" in per
        assert f"hit_release[rel:0.1/geometric]_{model}" in per
        for attack in ("share", "average"):
            assert f"attributable[abs:10000/{attack}]_{model}" in per
            assert f"attributable_se[abs:10000/{attack}]_{model}" in per
        assert (per[f"release_se[rel:0.1]_{model}"] > 0).any()
        assert (per[f"attributable_se[rel:0.1/average]_{model}"] == 0).all()
    # one scheme: no within-eps duplicates (risk_abs_*, attack_*), no column twice
    assert not [c for c in per if c.startswith(("risk_", "attack_"))]
    assert per.columns.is_unique
    assert (written / "confidential" / "risk_attributable.csv").is_file()


def test_per_record_frames_are_indexed_by_the_data_id(fresh_seed_result):
    r = fresh_seed_result
    per = r.risk_scores.per_record()
    assert per.index.name == r.data.id_column == "id"
    assert per.index.tolist() == list(r.data.record_id)
    assert r.risk_scores.records["restricted"].to_dataframe().index.name == "id"


def test_one_baseline_rule_for_groups_records_and_verdict(fresh_seed_result):
    s = fresh_seed_result.risk_scores.summary
    t = s.table
    at = fresh_seed_result.at_risk.at_risk
    for (key, attack), source in s.choices.items():
        rows = t[(t["measure"] == key) & (t["attack"] == attack)]
        assert set(rows["baseline_source"].replace("", np.nan).dropna()) == {source}
        for model in ("unrestricted", "restricted"):
            a = s.record_attributable(model, key, attack)
            for group, mask in (("all", np.ones_like(at)), ("at_risk", at), ("other", ~at)):
                row = rows[(rows["model"] == model) & (rows["group"] == group)].iloc[0]
                if not mask.any():
                    continue
                if attack == "share":  # the group's largest is the verdict's on its records
                    assert row["largest_attributable"] == pytest.approx(a[mask].max())
                    assert row["attributable_se"] > 0
                else:  # a 0/1 attack: its rate, no "largest" of 1
                    assert np.isnan(row["largest_attributable"])
                assert row["attributable"] == pytest.approx(a[mask].mean())


def _needles(result) -> list[str]:
    """Text forms of confidential per-record values (long enough not to match by chance)."""
    scores = result.risk_scores
    per = scores.per_record()
    values = [result.data.y, np.exp(result.data.y)]
    values += [per[c].to_numpy() for c in per if c.startswith(("release[", "loo[", "public[",
                                                                "attributable["))]
    rr = scores.records["restricted"]
    out = set()
    for v in np.concatenate([np.ravel(a).astype(float) for a in values]):
        for text in (repr(float(v)), f"{v:.10g}"):
            if len(text.lstrip("-")) >= 9:  # e.g. 0.123456789: no chance match
                out.add(text)
    assert rr.n_records == result.data.n_records and len(out) > 1000
    return sorted(out)


def test_release_folder_holds_no_confidential_value_nor_the_seed(written, fresh_seed_result):
    files = sorted(p for p in (written / "release").rglob("*") if p.is_file())
    blob = b"\n".join(p.read_bytes() for p in files)
    seed = str(fresh_seed_result.seed)
    assert len(seed) >= 20  # a fresh 128-bit seed
    assert seed.encode() not in blob
    assert seed.encode() not in (written / "release.json").read_bytes()
    assert (written / "confidential" / SEED_FILE).read_text().strip() == seed
    text = blob.decode("utf-8", errors="replace")
    hits = [n for n in _needles(fresh_seed_result) if n in text]
    assert hits == []
    # the binary Parquet file: no float64 of a confidential value either
    raw = (written / "release" / "implicates.parquet").read_bytes()
    y = fresh_seed_result.data.y
    assert not any(np.float64(v).tobytes() in raw for v in y)
    import pyarrow.parquet as pq

    meta = pq.read_metadata(written / "release" / "implicates.parquet").metadata or {}
    assert not any(seed.encode() in v for v in meta.values())


def test_default_seed_is_fresh_and_bundled_spec_keeps_its_seed(fresh_seed_result):
    assert fresh_seed_result.spec.sampling.seed is None
    assert load_spec(bundled_spec_path()).sampling.seed == 20181


# --- transform = "log" ------------------------------------------------------------------------


def test_transform_log_equals_a_hand_made_log_column_byte_for_byte(tmp_path):
    src = load_spec(bundled_spec_path())
    df = pd.read_csv(src.data_path())
    df["log_hand"] = np.log(df["price_usd"].to_numpy(dtype=float))
    csv = tmp_path / "points.csv"
    df.to_csv(csv, index=False)
    base = _spec().replace("data", path=str(csv))
    hand = _run(base.replace("data", response="log_hand")
                .replace("utility", formula="log_hand ~ sqft_living"))
    logged = _run(base.replace("data", response="price_usd", transform="log")
                  .replace("utility", formula=None))
    assert logged.spec.formula == "log(price_usd) ~ sqft_living"
    np.testing.assert_array_equal(logged.data.y, hand.data.y)
    out = write_release(logged, tmp_path / "out")
    # the hand-made run, back-transformed and renamed by hand, written by the same code
    frame = release_frames(hand)["restricted"]
    frame["log_hand"] = np.exp(frame["log_hand"].to_numpy())
    frame = frame.rename(columns={"log_hand": "price_usd"})
    # the writer writes one row group per implicate: the same table, value for value
    import geopandas

    pub_parquet = geopandas.read_parquet(out / "release" / "implicates.parquet")
    pd.testing.assert_frame_equal(pd.DataFrame(pub_parquet), pd.DataFrame(frame),
                                  check_exact=True)
    for imp, part in pd.DataFrame(frame.drop(columns="geometry")).groupby("implicate"):
        name = f"implicate_{int(imp):03d}.csv"
        want = part.drop(columns="implicate").to_csv(index=False).encode()
        assert (out / "release" / "csv" / name).read_bytes() == want
    # released on the original scale under the original name; risk judged on dollars
    pub = pd.read_csv(out / "release" / "csv" / "implicate_001.csv")
    assert "price_usd" in pub and pub["price_usd"].median() > 1000
    pd.testing.assert_frame_equal(logged.risk_scores.table, hand.risk_scores.table)
    readme = (out / "release" / "README.md").read_text()
    assert "`log(price_usd)`" in readme and "is on the log scale" not in readme


def test_transform_log_refuses_a_non_positive_response(tmp_path):
    from synthgeo import InputError

    src = load_spec(bundled_spec_path())
    df = pd.read_csv(src.data_path())
    df.loc[df.index[df["beds"] == 2][0], "price_usd"] = 0
    csv = tmp_path / "points.csv"
    df.to_csv(csv, index=False)
    spec = _spec().replace("data", path=str(csv), response="price_usd", transform="log")
    with pytest.raises(InputError, match="price_usd"):
        _run(spec.replace("utility", formula=None))


# --- the data users' README -------------------------------------------------------------------


def test_readme_says_no_record_met_the_rule_and_claims_no_smoothing():
    from synthgeo.release.readme import data_user_readme

    result = _run(_spec().replace("model", M_m=1e6))  # every record has one within 1,000 km
    assert result.at_risk.n_at_risk == 0
    readme = data_user_readme(result)
    assert "no record met the at-risk rule" in readme
    assert "Differential smoothing" not in readme and "was removed" not in readme
