"""Tests for synthgeo.risk.within_eps: hand-checkable within-ε risk and the risk summary."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from synthgeo.risk.within_eps import RiskResult, summarise_risk, within_eps_risk

# 3 records x 4 implicates, in dollars; distances to the truth are written next to each row.
TRUTH_USD = np.array([100_000.0, 50_000.0, 20_000.0])
SYN_USD = np.array(
    [
        [104_000.0, 92_000.0, 200_000.0, 100_500.0],  # |d| = 4000, 8000, 100000, 500
        [41_000.0, 70_000.0, 50_800.0, 59_000.0],  # |d| = 9000, 20000, 800, 9000
        [31_000.0, 35_000.0, 45_000.0, 60_000.0],  # |d| = 11000, 15000, 25000, 40000
    ]
)  # (record, implicate)


def _log_synthetic(values_usd: np.ndarray) -> xr.DataArray:
    return xr.DataArray(
        np.log(values_usd.T),
        dims=("implicate", "record"),
        coords={"record": ["a", "b", "c"][: values_usd.shape[0]]},
    )


@pytest.fixture(scope="module")
def hand_result() -> RiskResult:
    with pytest.warns(UserWarning, match="L=4"):
        return within_eps_risk(
            _log_synthetic(SYN_USD), np.log(TRUTH_USD), eps=(1_000.0, 10_000.0), p=(0.05, 0.1)
        )


def test_absolute_risk_by_hand(hand_result):
    # eps=1000: 500 / 800 / none;  eps=10000: 3, 3, 0 of 4 distances.
    expected = np.array([[1 / 4, 3 / 4], [1 / 4, 3 / 4], [0.0, 0.0]])
    got = hand_result.per_record["risk_abs"].transpose("record", "eps").values
    np.testing.assert_allclose(got, expected)
    assert hand_result.per_record["eps"].values.tolist() == [1_000.0, 10_000.0]


def test_relative_risk_by_hand(hand_result):
    # record a: 5% = 5000 -> {4000, 500}; 10% = 10000 -> {4000, 8000, 500}
    # record b: 5% = 2500 -> {800};       10% = 5000  -> {800}
    # record c: 5% = 1000, 10% = 2000 -> none
    expected = np.array([[2 / 4, 3 / 4], [1 / 4, 1 / 4], [0.0, 0.0]])
    got = hand_result.per_record["risk_rel"].transpose("record", "p").values
    np.testing.assert_allclose(got, expected)


def test_attack_uses_geometric_mean_in_dollars(hand_result):
    # g(mean log y) = geometric mean of the dollar values
    gm = [np.prod(row) ** 0.25 for row in SYN_USD]  # ~117762, ~54156, ~41371
    d = np.abs(np.array(gm) - TRUTH_USD)  # ~17762, ~4156, ~21371
    assert 17_000 < d[0] < 18_000 and 4_000 < d[1] < 4_300 and 21_000 < d[2] < 22_000
    attack_abs = hand_result.per_record["attack_abs"].transpose("record", "eps").values
    attack_rel = hand_result.per_record["attack_rel"].transpose("record", "p").values
    assert attack_abs.dtype == bool
    np.testing.assert_array_equal(attack_abs, [[False, False], [False, True], [False, False]])
    # relative: 5% of 50000 = 2500 < 4156 <= 5000 = 10%
    np.testing.assert_array_equal(attack_rel, [[False, False], [False, True], [False, False]])


def test_to_dataframe_columns(hand_result):
    df = hand_result.to_dataframe()
    assert list(df.columns) == [  # the <var>[<measure>] scheme of every per-record table
        "share[abs:1000]", "share[abs:10000]", "share[rel:0.05]", "share[rel:0.1]",
        "hit_release[abs:1000/geometric]", "hit_release[abs:10000/geometric]",
        "hit_release[rel:0.05/geometric]", "hit_release[rel:0.1/geometric]",
    ]
    assert df.index.name == "record" and list(df.index) == ["a", "b", "c"]
    assert df.loc["a", "share[rel:0.05]"] == 0.5
    assert hand_result.to_dataframe(id_column="sale_id").index.name == "sale_id"
    assert hand_result.n_implicates == 4 and hand_result.transform == "exp"


def test_identity_transform_and_negative_values():
    # 5 implicates: no warning. truth 1.0 and -2.0; relative uses |g(y)|.
    syn = xr.DataArray(
        np.array([[1.05, 1.2, 0.5, 1.0, 3.0], [-2.08, -2.5, -1.95, 2.0, -2.0]]).T,
        dims=("implicate", "record"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = within_eps_risk(syn, [1.0, -2.0], eps=0.1, p=0.1, transform="identity")
    # |d| rec 0: .05, .2, .5, 0, 2 -> eps .1: 2/5; p .1 (0.1): 2/5
    # |d| rec 1: .08, .5, .05, 4, 0 -> eps .1: 3/5; p .1 (0.2): 3/5
    np.testing.assert_allclose(res.per_record["risk_abs"].values[:, 0], [0.4, 0.6])
    np.testing.assert_allclose(res.per_record["risk_rel"].values[:, 0], [0.4, 0.6])
    # means: 1.35 (d .35) and -1.306 (d .694): no attack hit
    assert not res.per_record["attack_abs"].values.any()


def test_transposed_input_gives_same_result(hand_result):
    syn = _log_synthetic(SYN_USD).transpose("record", "implicate")
    with pytest.warns(UserWarning):
        res = within_eps_risk(syn, np.log(TRUTH_USD), eps=(1_000.0, 10_000.0), p=(0.05, 0.1))
    xr.testing.assert_equal(res.per_record.drop_attrs(), hand_result.per_record.drop_attrs())


def _identity_risk(values: np.ndarray) -> RiskResult:
    """values: (record, implicate) on the identity scale; truth is 10 for every record."""
    syn = xr.DataArray(values.T, dims=("implicate", "record"))
    with pytest.warns(UserWarning):
        return within_eps_risk(
            syn, np.full(values.shape[0], 10.0), eps=1.0, p=0.05, transform="identity"
        )


# 10.2 is within eps=1 and 5% (0.5) of 10; 20 is within neither.
H, F = 10.2, 20.0
UNRESTRICTED = np.array([[H, H, H, H], [H, H, F, F], [H, F, F, F], [F, F, F, F]])  # 1, .5, .25, 0
RESTRICTED = np.array([[H, F, F, F], [H, H, F, F], [F, F, F, F], [F, F, F, F]])  # .25, .5, 0, 0
AT_RISK = np.array([True, True, False, False])


def test_summarise_risk_by_hand():
    out = summarise_risk(
        _identity_risk(UNRESTRICTED), _identity_risk(RESTRICTED), AT_RISK,
        extra_groups={"nobody": np.zeros(4, bool)},
    )
    assert list(out.columns) == [
        "group", "measure", "n_records", "mean_unrestricted", "mean_restricted", "reduction",
        "median_record_reduction", "attack_share_unrestricted", "attack_share_restricted",
    ]
    assert list(out["group"]) == ["at_risk"] * 2 + ["other"] * 2 + ["all"] * 2 + ["nobody"] * 2
    assert list(out["measure"][:2]) == ["within $1", "within 5%"]
    rows = out.set_index(["group", "measure"])
    for measure in ("within $1", "within 5%"):  # the two measures agree by construction
        a = rows.loc[("at_risk", measure)]
        assert a["n_records"] == 2
        assert a["mean_unrestricted"] == pytest.approx((1 + 0.5) / 2)
        assert a["mean_restricted"] == pytest.approx((0.25 + 0.5) / 2)
        assert a["reduction"] == pytest.approx(1 - 0.375 / 0.75)  # 0.5
        # per record: 1 - .25/1 = .75 and 1 - .5/.5 = 0 -> median .375
        assert a["median_record_reduction"] == pytest.approx(0.375)
        # attack: record means 10.2 (hit), 15.1, 17.55, 20; restricted 12.65, 15.1, 20, 20
        assert a["attack_share_unrestricted"] == pytest.approx(0.5)
        assert a["attack_share_restricted"] == 0.0
        o = rows.loc[("other", measure)]
        assert o["mean_unrestricted"] == pytest.approx(0.125) and o["mean_restricted"] == 0
        assert o["reduction"] == pytest.approx(1.0)
        assert o["median_record_reduction"] == pytest.approx(1.0)  # only record 2 has r > 0
        al = rows.loc[("all", measure)]
        assert al["n_records"] == 4
        assert al["reduction"] == pytest.approx(1 - (0.75 / 4) / (1.75 / 4))  # 4/7
        assert al["median_record_reduction"] == pytest.approx(0.75)  # median(.75, 0, 1)
        assert al["attack_share_unrestricted"] == pytest.approx(0.25)
        e = rows.loc[("nobody", measure)]
        assert e["n_records"] == 0
        assert e.drop("n_records").isna().all()


def test_summarise_risk_empty_group_and_zero_unrestricted_risk():
    zero = np.full((4, 4), F)
    out = summarise_risk(_identity_risk(zero), _identity_risk(zero), np.ones(4, bool))
    other = out[out["group"] == "other"]
    assert (other["n_records"] == 0).all() and other["mean_unrestricted"].isna().all()
    at = out[out["group"] == "at_risk"].iloc[0]
    assert at["mean_unrestricted"] == 0.0 and np.isnan(at["reduction"])
    assert np.isnan(at["median_record_reduction"])


def test_summarise_risk_rejects_mismatches(hand_result):
    other = _identity_risk(UNRESTRICTED)
    with pytest.raises(ValueError, match="differ in eps"):
        summarise_risk(hand_result, other, np.ones(3, bool))
    with pytest.warns(UserWarning):
        fewer = within_eps_risk(
            _log_synthetic(SYN_USD[:2]), np.log(TRUTH_USD[:2]), eps=(1_000.0, 10_000.0),
            p=(0.05, 0.1),
        )
    with pytest.raises(ValueError, match="differ in n_records"):
        summarise_risk(hand_result, fewer, np.ones(3, bool))
    with pytest.raises(ValueError, match=r"`at_risk` must have shape \(3,\)"):
        summarise_risk(hand_result, hand_result, np.ones(2, bool))
    with pytest.raises(TypeError, match="`at_risk` must be an array of bool"):
        summarise_risk(hand_result, hand_result, [1, 0, 1])
    with pytest.raises(ValueError, match="must not reuse the name 'all'"):
        summarise_risk(hand_result, hand_result, np.ones(3, bool), extra_groups={"all": AT_RISK})


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"truth": np.log(TRUTH_USD[:2])}, ValueError, r"`truth` must have shape \(n_records,\)"),
        ({"truth": [np.nan, 1.0, 1.0]}, ValueError, "`truth` contains 1 NaN"),
        ({"eps": (-5.0,)}, ValueError, "`eps` must be positive"),
        ({"p": 0.0}, ValueError, "`p` must be positive"),
        ({"eps": (10.0, 10.0)}, ValueError, "`eps` must not repeat"),
        ({"transform": "log"}, ValueError, "`transform` must be one of"),
    ],
)
def test_within_eps_risk_validation(kwargs, exc, match):
    args = {"synthetic": _log_synthetic(SYN_USD), "truth": np.log(TRUTH_USD), **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(exc, match=match):
            within_eps_risk(**args)


def test_within_eps_risk_rejects_bad_synthetic():
    good = _log_synthetic(SYN_USD)
    with pytest.raises(TypeError, match="`synthetic` must be an xarray.DataArray"):
        within_eps_risk(good.values, np.log(TRUTH_USD))
    with pytest.raises(ValueError, match=r"exactly the dims \('implicate', 'record'\)"):
        within_eps_risk(good.rename(implicate="draw"), np.log(TRUTH_USD))
    bad = good.copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="`synthetic` contains 1 NaN"):
        within_eps_risk(bad, np.log(TRUTH_USD))
