"""Inputs that load fine but would give a meaningless fit or leak the response are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthgeo import InputError, SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.pipeline import prepare_data


@pytest.fixture()
def sales(tmp_path):
    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).query("beds == 2").drop_duplicates(
        subset=["lon", "lat", "price_usd"]).head(40)
    return spec, raw, tmp_path


def _spec(spec, raw, tmp_path, **data):
    path = tmp_path / "pts.csv"
    raw.to_csv(path, index=False)
    s = spec.replace("data", path=str(path), query=None, **{k: v for k, v in data.items()
                                                             if k != "formula"})
    if "formula" in data:
        s = s.replace("utility", formula=data["formula"])
    return s


def test_covariate_that_discloses_the_response(sales):
    spec, raw, tmp = sales
    s = _spec(spec, raw, tmp, covariates=["sqft_living", "price_usd"],
              formula="log_price ~ sqft_living")
    with pytest.raises(InputError, match="covariate `price_usd` determines the back-transformed"):
        prepare_data(s)


def test_covariate_monotone_in_the_response(sales):
    """sqrt(price): Pearson 0.99 with the price, but released it gives every price back."""
    spec, raw, tmp = sales
    raw = raw.assign(price_sqrt=np.sqrt(raw["price_usd"]))
    assert np.corrcoef(raw["price_sqrt"], raw["price_usd"])[0, 1] < 0.9999  # linear check misses
    s = _spec(spec, raw, tmp, covariates=["sqft_living", "price_sqrt"],
              formula="log_price ~ sqft_living")
    with pytest.raises(InputError, match=r"covariate `price_sqrt` determines the response "
                                         r"`log_price` \(rank correlation 1.000000\)"):
        prepare_data(s)


def test_exp_of_a_dollar_response_overflows(sales):
    spec, raw, tmp = sales
    s = _spec(spec, raw, tmp, response="price_usd", formula="price_usd ~ sqft_living")
    with pytest.raises(InputError, match=r"overflows \(\d+ record\(s\); no value is shown"):
        prepare_data(s)


def test_constant_covariate_and_response(sales):
    spec, raw, tmp = sales
    with pytest.raises(InputError, match=r"^covariate `sqft_living` is constant \(all [0-9,]+ "
                                         r"records share one value, not shown.*: it is "
                                         r"collinear .*remove it from `\[data\] covariates`"
                       ) as err:
        prepare_data(_spec(spec, raw.assign(sqft_living=1837), tmp))
    assert "1837" not in str(err.value)  # a covariate's value is confidential too (break-it)
    with pytest.raises(InputError, match=r"^response `log_price` is constant \(all [0-9,]+ "
                                         r"records share one value, not shown") as err:
        prepare_data(_spec(spec, raw.assign(log_price=12.34), tmp))
    assert "12.3" not in str(err.value)  # the response's value is confidential
    # 1e-9 around 11 passed the exact check and left the σ² posterior at round-off; 1.5e-7 of
    # it moved M by 4 % (break-it)
    noise = np.random.default_rng(0).normal(0.0, 1e-9, len(raw))
    with pytest.raises(InputError, match=r"^response `log_price` is numerically constant "
                                         r"\(its sd is below 1e-06 of its mean absolute") as err:
        prepare_data(_spec(spec, raw.assign(log_price=11.25 + noise), tmp))
    assert "11.2" not in str(err.value)
    with pytest.raises(InputError, match=r"numerically constant"):  # 1.5e-7 of 11: M off 4 %
        prepare_data(_spec(spec, raw.assign(log_price=11.0 + 1.6e3 * noise), tmp))
    prepare_data(_spec(spec, raw.assign(log_price=11.0 + 1e5 * noise), tmp))  # sd 1e-4: a model


def test_all_records_at_one_location(sales):
    spec, raw, tmp = sales
    with pytest.raises(InputError, match="only 1 distinct location"):
        prepare_data(_spec(spec, raw.assign(lon=-121.4, lat=38.6), tmp))


def test_formula_checked_before_fitting(sales):
    spec, raw, tmp = sales
    with pytest.raises(SpecError, match=r"`\[utility\] formula` 'log_price ~ sqft_livin'"):
        prepare_data(_spec(spec, raw, tmp, formula="log_price ~ sqft_livin"))


def test_coincident_records_are_fine(sales):
    spec, raw, tmp = sales
    raw = raw.copy()
    raw.iloc[1, raw.columns.get_loc("lon")] = raw.iloc[0]["lon"]
    raw.iloc[1, raw.columns.get_loc("lat")] = raw.iloc[0]["lat"]
    data = prepare_data(_spec(spec, raw, tmp))
    assert data.n_records == 40
    assert data.sites.n_sites == len(raw[["lon", "lat"]].drop_duplicates()) < 40
    assert np.all(np.isfinite(data.y))


def test_collinear_covariates_are_refused_before_fitting(sales):
    """Break-it: validate said OK and run refused only after both fits (at the baselines)."""
    spec, raw, tmp = sales
    raw = raw.assign(sqft2=2 * raw["sqft_living"] + 1)
    s = _spec(spec, raw, tmp, covariates=["sqft_living", "sqft2"],
              formula="log_price ~ sqft_living")
    with pytest.raises(InputError, match=r"^covariates are collinear \(design rank 2 < 3 "
                                         r"columns; involved: \['intercept', 'sqft_living', "
                                         r"'sqft2'\]\)"):
        prepare_data(s)


def test_a_column_in_large_units_is_not_taken_for_collinear(sales):
    """Break-it: sqft × 1e13 beside a 0/1 column swamped the unscaled rank."""
    spec, raw, tmp = sales
    raw = raw.assign(big=raw["sqft_living"] * 1e13, dummy=(raw["baths"] > 1).astype(float))
    s = _spec(spec, raw, tmp, covariates=["big", "dummy"], formula="log_price ~ big + dummy")
    assert prepare_data(s).X.shape[1] == 3
