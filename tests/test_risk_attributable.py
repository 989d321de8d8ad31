"""Baselines and attributable risk on a six-record example worked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from synthgeo.risk.attributable import SUMMARY_COLUMNS, attributable_summary
from synthgeo.risk.baselines import baseline_public, point_guesses
from synthgeo.risk.loo import baseline_loo, exact_precision
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive, pool_predictives, pool_synthetic
from synthgeo.risk.records import score_records

# Three pairs of records, 100 m apart within a pair and 1,000 km between pairs, so that under
# phi = log(2)/100 per metre the correlation is 0.5 within a pair and exactly 0 across pairs.
# With alpha = 0.25, sigma2 = 1 and beta = 0 each pair has covariance [[1.25, .5], [.5, 1.25]]:
# E[y_i | y_j] = (.5/1.25) y_j = 0.4 y_j and Var = 1.25 - .25/1.25 = 1.05.
XY = np.array([[0.0, 0], [100, 0], [1e6, 0], [1e6 + 100, 0], [2e6, 0], [2e6 + 100, 0]])
PHI, ALPHA = np.log(2.0) / 100.0, 0.25
Y = np.array([1.0, 1.0, 0.0, 2.0, 0.0, 0.0])  # identity scale, tolerance abs:1
X = np.ones((6, 1))
LOO_MEAN = np.array([0.4, 0.4, 0.8, 0.0, 0.0, 0.0])
LOO_SD = np.sqrt(1.05)
# the release: L = 2 implicates, predictive sd 0.5, mean = y except records 1 and 4
REL_MEAN = np.array([Y + [0, 0.5, 0, 0, 3, 0], Y + [0, -0.5, 0, 0, 3, 0]])
SYN = np.array([[1.2, 1.9, -0.5, 2.0, 3.0, 0.1],   # |d| .2 .9 .5 0   3   .1
                [0.9, 0.1, 0.4, 3.5, 2.9, -0.2]])  # |d| .1 .9 .4 1.5 2.9 .2
M = Measure(kind="abs", tol=1.0)
AT_RISK = np.array([True, True, False, False, False, False])


def _p(mean, sd):
    """P(|N(mean, sd^2) - y| <= 1) by the textbook formula, per record."""
    return norm.cdf((Y + 1 - mean) / sd) - norm.cdf((Y - 1 - mean) / sd)


@pytest.fixture(scope="module")
def parts():
    draws = dict(beta=np.zeros((2, 1)), sigma2=np.ones(2), phi=np.full(2, PHI),
                 alpha=np.full(2, ALPHA))
    loo = baseline_loo(Y, X, **draws, precision_of=exact_precision(XY))
    pub = baseline_public(SYN, X)
    rel = Predictive(mean=REL_MEAN, sd=np.full((2, 6), 0.5), name="release")
    return rel, loo, pub


@pytest.fixture(scope="module")
def records(parts):
    rel, loo, pub = parts
    return score_records(Y, synthetic=SYN, release=rel, baseline_loo=loo, baseline_public=pub,
                         measures=[M], g="identity", record=list("abcdef"))


def test_loo_baseline_by_hand(parts):
    _, loo, _ = parts
    np.testing.assert_allclose(loo.mean, [LOO_MEAN, LOO_MEAN], atol=1e-12)
    np.testing.assert_allclose(loo.sd, np.full((2, 6), LOO_SD), atol=1e-12)


def test_public_baseline_by_hand(parts):
    _, _, pub = parts
    # intercept-only OLS per implicate: the mean, s^2 = sample variance, h_ii = 1/6
    for ell in range(2):
        np.testing.assert_allclose(pub.mean[ell], SYN[ell].mean())
        np.testing.assert_allclose(pub.sd[ell], np.sqrt(SYN[ell].var(ddof=1) * (1 + 1 / 6)))


def test_per_record_risks_by_hand(records):
    ds = records.per_record.sel(measure="abs:1")
    np.testing.assert_allclose(ds["share"], [1, 1, 1, 0.5, 0, 1])
    # release: 2 Phi(2) - 1 where centred; record b: Phi(1) - Phi(-3); record e: ~3e-5
    centred, b = 2 * norm.cdf(2) - 1, norm.cdf(1) - norm.cdf(-3)
    np.testing.assert_allclose(ds["release"], [centred, b, centred, centred,
                                               norm.cdf(-4) - norm.cdf(-8), centred], atol=1e-12)
    np.testing.assert_allclose(ds["loo"], _p(LOO_MEAN, LOO_SD), atol=1e-12)
    pub_m, pub_s = SYN.mean(axis=1), np.sqrt(SYN.var(axis=1, ddof=1) * 7 / 6)
    expect_pub = np.mean([_p(pub_m[ell], pub_s[ell]) for ell in range(2)], axis=0)
    np.testing.assert_allclose(ds["public"], expect_pub, atol=1e-12)
    # average attack: implicate means 1.05 .95 -.05 2.75 2.95 -.05 -> all but e within 1
    assert ds["hit_release"].sel(form="geometric").values.tolist() == [1, 1, 1, 1, 0, 1]
    # LOO guesses .4 .4 .8 0 0 0 -> d .6 .6 .8 2 0 0: all but d
    assert ds["hit_loo"].sel(form="arithmetic").values.tolist() == [1, 1, 1, 0, 1, 1]
    df = records.to_dataframe()
    assert list(df.index) == list("abcdef")
    assert "hit_public[abs:1/arithmetic]" in df.columns and df.shape == (6, 13)
    # Monte Carlo se: sd over the L = 2 implicates of the exact probabilities, / sqrt(2)
    p_rel = np.array([_p(REL_MEAN[ell], 0.5) for ell in range(2)])
    np.testing.assert_allclose(df["release_se[abs:1]"], p_rel.std(axis=0, ddof=1) / np.sqrt(2),
                               atol=1e-12)
    np.testing.assert_allclose(df["loo_se[abs:1]"], 0.0, atol=1e-12)  # same LOO at both draws


def test_attributable_by_hand(records):
    s = attributable_summary({"unrestricted": records, "restricted": records},
                             {"at_risk": AT_RISK, "other": ~AT_RISK})
    assert list(s.table.columns) == list(SUMMARY_COLUMNS)
    assert len(s.table) == 2 * 3 * 2  # models x groups x attacks (one measure)
    ds = records.per_record.sel(measure="abs:1")
    rel, loo, pub = (ds[v].values for v in ("release", "loo", "public"))
    rows = s.table.set_index(["model", "group", "attack"])
    # one baseline rule: b* chosen on all records, used for every group and record
    stronger = "loo" if loo.mean() >= pub.mean() else "public"
    base = loo if stronger == "loo" else pub
    assert s.choices == {("abs:1", "share"): stronger,
                         ("abs:1", "average"): s.choices[("abs:1", "average")]}
    a_rec = s.record_attributable("restricted", "abs:1", "share")
    for group, mask in (("all", np.ones(6, bool)), ("at_risk", AT_RISK), ("other", ~AT_RISK)):
        row = rows.loc[("restricted", group, "share")]
        assert row["baseline_source"] == stronger
        assert row["release"] == pytest.approx(rel[mask].mean())
        assert row["baseline"] == pytest.approx(base[mask].mean())
        assert row["attributable"] == pytest.approx(rel[mask].mean() - base[mask].mean())
        # the group's largest is the largest of the verdict's a_i over the same records
        assert row["largest_attributable"] == pytest.approx(a_rec[mask].max())
        assert row["loo_stronger_share"] == pytest.approx((loo >= pub)[mask].mean())
        assert row["release_realised"] == pytest.approx(ds["share"].values[mask].mean())
        avg = rows.loc[("restricted", group, "average")]
        a_avg = s.record_attributable("restricted", "abs:1", "average")
        # a 0/1 attack reports its rate (the mean), never a "largest" of 1
        assert np.isnan(avg["largest_attributable"])
        assert avg["attributable"] == pytest.approx(a_avg[mask].mean())
        assert np.isnan(avg["attributable_se"])
        # without the groups' rows (score_records(groups=None)) the group se is unknown
        assert np.isnan(row["attributable_se"])
    # record a by hand: Phi((2 - .4)/sqrt(1.05)) - Phi(-.4/sqrt(1.05)) = .9408 - .3482
    assert loo[0] == pytest.approx(0.5926, abs=1e-4)
    # only record d (y = 2, LOO guess 0) has public > LOO
    assert rows.loc[("restricted", "all", "share")]["loo_stronger_share"] == pytest.approx(5 / 6)
    # average attack, all: release 5/6 hits; LOO 5/6 (d misses); attributable 0
    avg = rows.loc[("unrestricted", "all", "average")]
    assert avg["release"] == pytest.approx(5 / 6) and avg["baseline"] == pytest.approx(5 / 6)
    assert avg["attributable"] == pytest.approx(0.0)
    a = s.record_attributable("restricted", "abs:1", "share")
    np.testing.assert_allclose(a, rel - (loo if s.choices[("abs:1", "share")] == "loo"
                                         else pub))


def test_a_record_the_baseline_predicts_exactly_has_attributable_risk_zero():
    # record 0: the release reveals it (risk 1) but the LOO baseline predicts it exactly too,
    # so none of that risk is attributable to the release; record 1: the baseline is far off.
    y = np.array([5.0, 5.0])
    exact = Predictive(mean=np.array([[5.0, 9.0]]), sd=np.zeros((1, 2)))
    public = Predictive(mean=np.full((1, 2), 9.0), sd=np.ones((1, 2)))
    release = Predictive(mean=np.full((3, 2), 5.0), sd=np.zeros((3, 2)))
    rr = score_records(y, synthetic=np.full((3, 2), 5.0), release=release, baseline_loo=exact,
                       baseline_public=public, measures=[Measure.parse("rel:0.1")], g="exp")
    s = attributable_summary({"restricted": rr}, {"first": np.array([True, False])})
    ds = rr.per_record.sel(measure="rel:0.1")
    assert ds["release"].values.tolist() == [1.0, 1.0] and ds["share"].values.tolist() == [1, 1]
    row = s.table.set_index(["group", "attack"]).loc[("first", "share")]
    assert row["release"] == 1.0 and row["baseline_source"] == "loo"
    assert row["attributable"] == 0.0
    assert s.record_attributable("restricted", "rel:0.1", "share")[0] == 0.0
    assert s.record_attributable("restricted", "rel:0.1", "average")[0] == 0.0
    # with a release that reveals less than the exact baseline, attributable goes negative
    spread = Predictive(mean=np.full((3, 2), 5.0), sd=np.full((3, 2), 0.2))
    rr2 = score_records(y, synthetic=np.full((3, 2), 5.3), release=spread, baseline_loo=exact,
                        baseline_public=public, measures=[Measure.parse("rel:0.1")])
    s2 = attributable_summary({"restricted": rr2}, {"first": np.array([True, False])})
    assert s2.record_attributable("restricted", "rel:0.1", "share")[0] < 0


def test_empty_group_is_reported_as_empty(records):
    s = attributable_summary({"m": records}, {"nobody": np.zeros(6, bool)})
    row = s.table.set_index(["group", "attack"]).loc[("nobody", "share")]
    assert row["n_records"] == 0 and np.isnan(row["release"]) and row["baseline_source"] == ""


def test_smearing_makes_the_arithmetic_guess_higher():
    pred = Predictive(mean=np.log([[100_000.0], [120_000.0]]), sd=np.full((2, 1), 0.3))
    g = point_guesses(pred, "exp")
    assert np.exp(g["geometric"][0]) == pytest.approx(np.sqrt(100_000.0 * 120_000.0))
    assert np.exp(g["arithmetic"][0]) == pytest.approx(110_000.0 * np.exp(0.045))


def test_pooled_releases_strengthen_the_average_attack():
    # two releases of the same 1 record: each implicate mean is off by +/-0.3 (miss at 10%),
    # pooled they average to the truth (hit)
    y = np.array([np.log(100_000.0)])
    first, second = y + np.array([[0.2], [0.4]]), y + np.array([[-0.2], [-0.4]])
    pred = lambda s: Predictive(mean=s, sd=np.full(s.shape, 0.01))  # noqa: E731
    base = Predictive(mean=np.full((1, 1), 20.0), sd=np.ones((1, 1)))
    kw = dict(baseline_loo=base, baseline_public=base, measures=[Measure.parse("rel:0.1")])
    one = score_records(y, synthetic=first, release=pred(first), **kw)
    both = score_records(y, synthetic=pool_synthetic(first, second),
                         release=pool_predictives(pred(first), pred(second)), **kw)
    assert not one.per_record["hit_release"].values.any()
    assert both.per_record["hit_release"].sel(form="geometric").item()
    assert both.n_implicates == 4
    with pytest.raises(ValueError, match="same records"):
        pool_synthetic(first, np.zeros((2, 2)))


def test_score_records_refuses_mismatches(parts):
    rel, loo, pub = parts
    with pytest.raises(ValueError, match="pass the predictive the implicates were drawn from"):
        score_records(Y, synthetic=SYN[:1], release=rel, baseline_loo=loo, baseline_public=pub,
                      measures=[M], g="identity")
    with pytest.raises(ValueError, match="at least one measure"):
        score_records(Y, synthetic=SYN, release=rel, baseline_loo=loo, baseline_public=pub,
                      measures=[], g="identity")
    with pytest.raises(ValueError, match="collinear"):
        baseline_public(SYN, np.column_stack([X, 2 * X]))


@pytest.mark.filterwarnings("ignore:Only L=2 implicates")
def test_realised_shares_are_taken_from_the_within_eps_risk_not_counted_again(parts, records):
    import xarray as xr

    from synthgeo.risk.within_eps import within_eps_risk

    rel, loo, pub = parts
    syn = xr.DataArray(SYN, dims=("implicate", "record"))
    realised = within_eps_risk(syn, Y, eps=[1.0], p=[0.5], transform="identity")
    kw = dict(synthetic=SYN, release=rel, baseline_loo=loo, baseline_public=pub,
              g="identity", record=list("abcdef"))
    rel_05 = Measure(kind="rel", tol=0.5)
    reused = score_records(Y, measures=[M, rel_05], realised=realised, **kw)
    counted = score_records(Y, measures=[M, rel_05], **kw)
    assert reused.per_record.equals(counted.per_record)  # the same numbers, counted once
    np.testing.assert_array_equal(reused.per_record["share"].sel(measure="abs:1").values,
                                  [1.0, 1.0, 1.0, 0.5, 0.0, 1.0])  # |d| by hand, above
    marked = within_eps_risk(syn, Y, eps=[1.0], transform="identity")
    marked.per_record["risk_abs"][:] = 0.25  # proves the share is read, not recounted
    assert (score_records(Y, measures=[M], realised=marked, **kw)
            .per_record["share"].values == 0.25).all()
    with pytest.raises(ValueError, match="`realised` must be the within-ε risk of these"):
        score_records(Y, measures=[M], realised=within_eps_risk(syn, Y, eps=[1.0]), **kw)


def test_attributable_se_keeps_the_pairing_of_release_and_baseline():
    # a baseline drawn at the release's draws moves with it: a_i has a smaller se than r_i
    y = np.zeros(3)
    mean = np.array([[0.0, 0.5, 1.0], [1.0, 0.0, 0.5], [0.5, 1.0, 0.0], [2.0, 2.0, 2.0]])
    rel = Predictive(mean=mean, sd=np.ones((4, 3)))
    near = Predictive(mean=mean + 0.1, sd=np.ones((4, 3)))  # same draws, shifted
    pub = Predictive(mean=np.full((1, 3), 9.0), sd=np.ones((1, 3)))
    m = Measure(kind="abs", tol=1.0)
    rr = score_records(y, synthetic=np.zeros((4, 3)), release=rel, baseline_loo=near,
                       baseline_public=pub, measures=[m], g="identity")
    s = attributable_summary({"m": rr})
    assert s.choices[("abs:1", "share")] == "loo"
    p_rel = norm.cdf(1 - mean) - norm.cdf(-1 - mean)
    p_loo = norm.cdf(1 - mean - 0.1) - norm.cdf(-1 - mean - 0.1)
    expect = (p_rel - p_loo).std(axis=0, ddof=1) / 2.0  # sd of paired differences / sqrt(4)
    np.testing.assert_allclose(s.record_attributable_se("m", "abs:1"), expect, atol=1e-12)
    assert np.all(expect < rr.se("release", "abs:1") / 5)
    # the public baseline (1 row) is independent of the release: variances add
    ds = rr.per_record.sel(measure="abs:1")
    assert float(ds["cov_release_public"].max()) == 0.0 and rr.n_rows("public") == 1
    # the average attack's 0/1 outcomes get se 0 (documented)
    assert np.all(s.record_attributable_se("m", "abs:1", "average") == 0.0)


def test_group_se_is_the_se_over_rows_and_identical_models_differ_by_zero():
    """se of a group's mean a from its per-row means; two identical models: difference 0 ± 0."""
    from synthgeo.risk.measure import Measure
    from synthgeo.risk.predictive import Predictive
    from synthgeo.risk.rao_blackwell import within_probability
    from synthgeo.risk.records import score_records

    rng = np.random.default_rng(4)
    L, n = 30, 12
    y = rng.normal(size=n)
    rel = Predictive(mean=rng.normal(size=(L, n)), sd=np.full((L, n), 0.8))
    loo = Predictive(mean=rng.normal(size=(L, n)), sd=np.full((L, n), 1.2))
    pub = Predictive(mean=np.zeros((L, n)), sd=np.full((L, n), 3.0))
    m = Measure(kind="abs", tol=0.5)
    mask = np.arange(n) < 5
    groups = {"all": np.ones(n, bool), "at_risk": mask, "other": ~mask}
    rr = score_records(y, synthetic=rel.mean, release=rel, baseline_loo=loo,
                       baseline_public=pub, measures=[m], g="identity", groups=groups)
    s = attributable_summary({"unrestricted": rr, "restricted": rr},
                             {"at_risk": mask, "other": ~mask})
    source = s.choices[(m.key, "share")]
    base = loo if source == "loo" else pub
    for gname, g in groups.items():
        rows = (within_probability(rel, y, m, "identity")[:, g].mean(axis=1)
                - within_probability(base, y, m, "identity")[:, g].mean(axis=1))
        row = s.table.query("model == 'restricted' and attack == 'share' "
                            "and group == @gname").iloc[0]
        assert row["attributable"] == pytest.approx(rows.mean())
        assert row["attributable_se"] == pytest.approx(rows.std(ddof=1) / np.sqrt(L))
        assert s.difference(gname, m.key) == (0.0, 0.0)
    # a model whose release moves away from the truth in every row: a difference beyond noise
    far = Predictive(mean=rel.mean + 3.0, sd=rel.sd)
    rr2 = score_records(y, synthetic=far.mean, release=far, baseline_loo=loo,
                        baseline_public=pub, measures=[m], g="identity", groups=groups)
    s2 = attributable_summary({"unrestricted": rr, "restricted": rr2})
    diff, se = s2.difference("all", m.key)
    assert diff < 0 and abs(diff) > 5 * se > 0
