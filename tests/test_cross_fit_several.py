"""The cross-fit and ``protect = "targets"`` for several gaussian responses (issue 25, item 5).

A two-response fixture (the bundled 140 sales; a second response built from the first, the
covariate and noise), exact GP, fake hyper-parameter draws. A later response's cross-fitted
predictive is checked against numpy's conditional from the full covariance, with the record's
earlier response at its synthetic value of the same implicate; the calibrated one against
:func:`calibrate_covariates` of that raw predictive, moved the same way; the same seed gives the
same values; the rounds of ``protect = "targets"`` reach PASS on every response, or say which
response and target failed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.spatial.distance import cdist

import synthgeo as sg
from synthgeo._errors import SpecError
from synthgeo.config import (
    AnonymityConfig,
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    RiskTarget,
    SamplingConfig,
)
from synthgeo.config.model import SynthesisConfig
from synthgeo.io.points import coordinates_m
from synthgeo.pipeline import responses
from synthgeo.pipeline.run import run_release
from synthgeo.synthesis.cross_fit import calibrate_covariates
from synthgeo.testing import fake_fitter, fake_spec

L = 6


def _points():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
                             crs="EPSG:4326", id="id", query="beds == 2")
    rng = np.random.default_rng(5)  # a second response that depends on the first
    pts["v2"] = (6.0 + 0.4 * pts["log_price"] + 2e-4 * pts["sqft_living"]
                 + 0.15 * rng.standard_normal(len(pts)))
    return pts


def _spec(n_implicates: int = L, **synthesis) -> ReleaseSpec:
    spec = ReleaseSpec(
        data=DataConfig(responses=[{"name": "log_price"}, {"name": "v2"}],
                        covariates=["sqft_living"], id="id"),
        model=ModelConfig(gp="exact"), sampling=SamplingConfig(seed=11),
        anonymity=AnonymityConfig(on_location_failure="warn"))
    spec = fake_spec(spec, n_draws=150, n_implicates=n_implicates)
    return spec.replace("synthesis", **synthesis) if synthesis else spec


def _run(spec, monkeypatch=None, fitter=None):
    """Run the release; with ``monkeypatch``, also return the released (shifted) Datasets."""
    captured: list[xr.Dataset] = []
    if monkeypatch is not None:
        shift = responses.shift_to_earlier

        def keep(ds, fit, X, X_syn):
            out = shift(ds, fit, X, X_syn)
            if ds.attrs.get("predictive") == "cross_fit":
                captured.append(out)
            return out

        monkeypatch.setattr(responses, "shift_to_earlier", keep)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_release(spec, points=_points(), fitter=fitter or fake_fitter(n_draws=150))
    return res, captured


def _brute_force(res, ds, checked):
    """Mean and sd (L, n) of v2_i given every record outside its site, numpy's conditional.

    At each implicate's posterior draw θ_ℓ of the unrestricted fit, from the full covariance
    σ²(exp(−φ d) + α I); record i's own design row holds its *synthetic* earlier response of
    implicate ℓ (the restricted chain's), everyone else's their confidential one.
    """
    first, second = res.responses
    fit = second.fits["unrestricted"]
    sel = {"chain": xr.DataArray(ds["source_chain"].values, dims="implicate"),
           "draw": xr.DataArray(ds["source_draw"].values, dims="implicate")}
    post = fit.posterior[["beta", "sigma2", "phi", "nugget"]].sel(sel)
    beta = post["beta"].transpose("implicate", "coef").values
    X = np.column_stack([np.ones(res.data.n_records), res.data.gdf["sqft_living"].to_numpy(),
                         first.y])
    assert second.coef_names == ["Intercept", "sqft_living", "log_price"]
    D = cdist(coordinates_m(res.data.gdf), coordinates_m(res.data.gdf))
    site = res.data.sites.site_index
    y = second.y
    mean, sd = np.full((L, y.size), np.nan), np.full((L, y.size), np.nan)  # ``checked`` only
    for ell in range(L):
        s2, phi, tau2 = (float(post[v].values[ell]) for v in ("sigma2", "phi", "nugget"))
        K = s2 * np.exp(-phi * D) + tau2 * np.eye(y.size)
        r = y - X @ beta[ell]
        x_syn = X.copy()
        x_syn[:, 2] = first.synthetic["restricted"][ell]
        for i in checked:
            rest = site != site[i]
            w = np.linalg.solve(K[np.ix_(rest, rest)], K[rest, i])
            mean[ell, i] = x_syn[i] @ beta[ell] + w @ r[rest]
            sd[ell, i] = np.sqrt(K[i, i] - K[i, rest] @ w)
    return mean, sd, X, beta


@pytest.fixture(scope="module")
def raw():
    """The raw cross-fit on both responses, its released Datasets captured."""
    mp = pytest.MonkeyPatch()
    try:
        return _run(_spec(predictive="cross_fit", cross_fit_calibration="none"), mp)
    finally:
        mp.undo()


def test_a_later_responses_cross_fit_is_the_brute_force_conditional(raw):
    """Raw cross-fit: v2's predictive given every other site's v2 (and the model's covariates,
    the confidential log_price among them), then moved to its own synthetic log_price of the
    same implicate: numpy's conditional from the full covariance (1e-8)."""
    res, captured = raw
    assert len(captured) == 1  # the later response only: the first is not moved
    ds = captured[0]
    second = res.responses[1]
    assert second.fits["restricted"] is second.fits["unrestricted"]  # no restricted refit
    site = res.data.sites.site_index
    shared = [i for i in range(site.size) if (site == site[i]).sum() > 1]
    assert shared  # co-sited records: the whole site is left out
    checked = sorted({*range(0, site.size, 7), *shared[:2]})  # all 140: ~20 s under load
    mean, sd, _, _ = _brute_force(res, ds, checked)
    np.testing.assert_allclose(ds["y_mean"].values[:, checked], mean[:, checked], rtol=0,
                               atol=1e-8)
    np.testing.assert_allclose(ds["y_sd"].values[:, checked], sd[:, checked], rtol=0,
                               atol=1e-8)
    released = second.synthetic["restricted"]
    np.testing.assert_array_equal(ds["y_synthetic"].values, released)
    z = (released - ds["y_mean"].values) / ds["y_sd"].values  # standard normal residuals
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.1
    # the first response is cross-fitted too (every record; no restricted refit)
    assert res.responses[0].fits["restricted"] is res.responses[0].fits["unrestricted"]
    assert res.responses[1].own_value_leak is None  # raw: no own-value term


def test_a_later_responses_calibrated_cross_fit_is_calibrated_then_moved(raw, monkeypatch):
    """covariates_loo: the raw conditional calibrated on the model's design (with the earlier
    confidential responses), then moved by (x† − x)β like the posterior route (1e-8)."""
    res_raw, captured_raw = raw
    res, captured = _run(_spec(predictive="cross_fit", cross_fit_calibration="covariates_loo"),
                         monkeypatch)
    ds, ds_raw = captured[0], captured_raw[0]
    np.testing.assert_array_equal(ds["source_draw"].values, ds_raw["source_draw"].values)
    first, second = res.responses
    X = np.column_stack([np.ones(res.data.n_records), res.data.gdf["sqft_living"].to_numpy(),
                         first.y])
    fit = second.fits["unrestricted"]
    sel = {"chain": xr.DataArray(ds["source_chain"].values, dims="implicate"),
           "draw": xr.DataArray(ds["source_draw"].values, dims="implicate")}
    beta = fit.posterior["beta"].sel(sel).transpose("implicate", "coef").values
    x_syn = np.repeat(X[None], L, axis=0)
    x_syn[:, :, 2] = first.synthetic["restricted"]
    shift = np.einsum("lnp,lp->ln", x_syn - X[None], beta)
    raw_mean = ds_raw["y_mean"].values - np.einsum(  # the raw predictive before its move
        "lnp,lp->ln", _syn_design(res_raw, X) - X[None], beta)
    expected = calibrate_covariates(raw_mean, second.y, X, leave_own_out=True) + shift
    np.testing.assert_allclose(ds["y_mean"].values, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ds["y_sd"].values, ds_raw["y_sd"].values, rtol=0, atol=1e-12)
    leak = second.own_value_leak
    assert leak is not None and 0 < leak["largest_weight"] < 0.5
    # the analyst's v2 ~ sqft_living on the released values: q̄ near the confidential estimate
    u = second.utility
    assert (u.loc[u["model"] == "restricted", "ci_overlap"] > 0.5).all()


def _syn_design(res, X):
    x_syn = np.repeat(X[None], L, axis=0)
    x_syn[:, :, 2] = res.responses[0].synthetic["restricted"]
    return x_syn


def test_same_seed_same_values(raw):
    """Determinism: a second run with the same seed releases the same values, both responses."""
    res, _ = raw
    again, _ = _run(_spec(predictive="cross_fit", cross_fit_calibration="none"))
    for a, b in zip(res.responses, again.responses):
        np.testing.assert_array_equal(a.synthetic["restricted"], b.synthetic["restricted"])


@pytest.mark.slow  # two protect runs of three rounds each (~40 s on a loaded 2-core machine)
def test_protect_on_two_responses_reaches_pass_with_every_response_judged(tmp_path):
    """protect = "targets": rounds applied to both responses; every response is judged on its
    own values and against its release attacker; the calibrated cross-fit fails against the
    attacker and the third round (input noise per response) PASSes on every response; its
    record (one target entry per response and attacker) is schema-valid; a target that cannot
    be met says which response failed and why."""
    from synthgeo.release.report._risk_sections import section_protection
    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import sequential_record

    target = RiskTarget(measure="rel:0.1", max_attributable_record=0.35)
    spec = _spec(n_implicates=20).replace("risk", protect="targets", targets=[target],
                                          on_risk_failure="warn")
    res, _ = _run(spec)
    prot = res.protection
    assert len(prot["rounds"]) in (3, 4) and "input noise" in prot["rounds"][2]["mechanism"]
    if len(prot["rounds"]) == 4:  # round 3 failed: the same noise, implicates of y*
        assert prot["rounds"][2]["verdict"] == "FAIL"
        assert prot["rounds"][3]["mechanism"].endswith("implicates of y*")
    # the first response meets every target; the later one's own values are judged over its
    # own noise only (the earlier response's noise reaches it through its design: docs,
    # "Seeking the targets"), so whether it passes is what the run says, with the reason
    assert res.risk_statuses["log_price"] == "PASS"
    assert prot["reached"] == (res.risk_status == "PASS")
    if not prot["reached"]:
        assert "response `v2`" in prot["why_not"] and "own values" in prot["why_not"]
    second = prot["rounds"][1]  # the calibrated cross-fit: the release attacker fails it
    assert any(t["attacker"] == "release_attacker" and t["status"] == "FAIL"
               for t in second["targets"])
    last = prot["rounds"][-1]
    assert {(t["response"], t["attacker"]) for t in last["targets"]} == {
        (r, a) for r in ("log_price", "v2") for a in ("own_values", "release_attacker")}
    assert all(t["status"] == "PASS" for t in last["targets"]
               if t["attacker"] == "release_attacker" or t["response"] == "log_price")
    assert res.spec.risk.protect == "targets"  # the spec as asked
    rec = sequential_record(res, seconds={"total": 1.0})
    validate_release_record(rec)
    assert rec["protection"]["released_round"] == len(prot["rounds"])
    assert rec["synthesis"]["predictive"] == "cross_fit"
    assert all("own_value_leak" in r for r in rec["responses"])  # null under input noise
    attackers = {r["name"]: r["risk_release_attacker"] for r in rec["responses"]}
    assert attackers["log_price"]["means_read"] == ["log_price", "v2"]
    assert attackers["v2"]["means_read"] == ["v2"] and attackers["v2"]["approximate"] is None
    assert all(a["judged"] and a["largest_attributable"] <= 0.35 for a in attackers.values())
    noise = {r["name"]: r["input_noise"] for r in rec["responses"]}
    assert all(v["chosen"] == "auto" and v["reached"] for v in noise.values())
    assert noise["log_price"]["sd"] != noise["v2"]["sd"]  # each response's own κ
    joint = rec["verdicts"]["risk"]["release_attacker_joint"]
    assert joint["n_above_any"] == 0 and joint["threshold"] == 0.35
    assert [b["response"] for b in joint["by_response"]] == ["log_price", "v2"]
    from synthgeo.release.report._sequential import section_responses

    body = section_responses(res).body  # a paragraph per response, the count over them
    assert 'id="neighbour-signal-1"' in body and 'id="neighbour-signal-2"' in body
    assert 'id="release-attacker-joint"' in body and "input noise of sd" in body
    section = section_protection(res)  # the report's rounds, a row per response and target
    assert section is not None and ">response<" in section.body and ">v2<" in section.body
    # a limit no mechanism can meet: every round runs, and the reason names the response
    strict = spec.replace("risk", targets=[RiskTarget(measure="rel:0.1",
                                                      max_attributable_record=1e-6)],
                          on_risk_failure="warn").replace("synthesis", n_implicates=L)
    fitter, labels = fake_fitter(n_draws=150), []

    def counting(*args, **kwargs):
        labels.append(kwargs.get("label"))
        return fitter(*args, **kwargs)

    failed, _ = _run(strict, fitter=counting)
    p = failed.protection
    # every round runs, the input-noise round included, and the reason names the response
    assert not p["reached"] and len(p["rounds"]) == 4 and failed.risk_status == "FAIL"
    assert "response `" in p["why_not"] and "max_attributable_record" in p["why_not"]
    assert "input noise was chosen" in p["why_not"] and "(of each response)" in p["why_not"]
    # each response's unrestricted fit is made once (round 1) and reused by the later rounds;
    # the input-noise rounds fit each response's y* once (what they release comes from y*; the
    # fourth round reuses the third's fit)
    assert sorted(labels) == (["restricted"] * 2 + ["unrestricted"] * 2
                              + ["unrestricted (y*)"] * 2)


def test_a_yes_no_response_is_refused_with_the_cross_fit():
    """Yes/no and count responses stay refused: no closed-form leave-out predictive."""
    with pytest.raises(SpecError, match="cross_fit.*yes/no response `s`.*no closed form"):
        ReleaseSpec(data=DataConfig(responses=[{"name": "a"}, {"name": "s",
                                                                "family": "bernoulli"}]),
                    sampling=SamplingConfig(sampler="grid"),
                    synthesis=SynthesisConfig(predictive="cross_fit"))


def _later_means(spec, data_j, fit, x_syn, seed=3):
    """The later response's released means (mean over implicates of each predictive), by the
    production synthesis: :func:`run._draw` then :func:`responses.shift_to_earlier`."""
    from synthgeo.pipeline import run as run_module

    keep: dict = {}
    ds = run_module._draw(spec, data_j, fit, "restricted", seed, keep=keep)
    ds = responses.shift_to_earlier(ds, fit, data_j.X, x_syn)
    ds.attrs["raw_error"] = keep["raw_error"]  # this test's own copy (not a release)
    return ds, ds["y_mean"].values.mean(axis=0)


@pytest.mark.parametrize("calibration", ["none", "covariates", "covariates_loo"])
def test_a_later_responses_map_is_the_finite_difference_of_its_synthesis(raw, calibration):
    """The release attacker of several responses: ∂(v2's released means)/∂v2_i and
    ∂/∂log_price_i (the confidential earlier value in v2's design, the released log_price held
    fixed) by finite differences of the production synthesis, against the information the
    attacker uses: its own map (``release_information`` on v2's design) and the earlier
    response's (``later_response_information``: −Σ_ℓ b_ℓ M_ℓ / L)."""
    import dataclasses

    from synthgeo.pipeline.release_attack import (
        implicate_variance,
        later_response_information,
        released_map,
    )
    from synthgeo.pipeline.risk_stage import posterior_draws
    from synthgeo.risk.release_attacker import release_information

    res, _ = raw
    spec = _spec(predictive="cross_fit", cross_fit_calibration=calibration)
    first, second = res.responses
    fit = second.fits["unrestricted"]
    X = np.column_stack([np.ones(res.data.n_records), res.data.gdf["sqft_living"].to_numpy(),
                         first.y])
    data_j = dataclasses.replace(res.data, y=second.y, X=X,
                                 coef_names=["Intercept", "sqft_living", "log_price"])
    x_syn = _syn_design(res, X)
    ds, base = _later_means(spec, data_j, fit, x_syn)
    beta = posterior_draws(fit, ds)["beta"]
    shift = np.einsum("lnp,lp->ln", x_syn - X[None], beta)
    s2 = implicate_variance(ds, shift)
    w = L / s2
    M0 = released_map(spec, data_j, fit, ds, "cross_fit")
    own = release_information(M0, X, 1.0 / s2, calibration=calibration) * L
    cross = later_response_information(spec, data_j, fit, ds, X, 2, beta, s2,
                                       ds.attrs["raw_error"]) * L
    site = res.data.sites.site_index
    shared = [i for i in range(site.size) if (site == site[i]).sum() > 1]
    h = 1e-3
    for i in [0, 17, 64, *shared[:2]]:
        up = second.y.copy()
        up[i] += h
        col = (_later_means(spec, dataclasses.replace(data_j, y=up), fit, x_syn)[1] - base) / h
        if calibration == "none":  # the record's own block does not enter its own mean
            assert np.all(np.abs(col[site == site[i]]) < 1e-8)
        np.testing.assert_allclose((col ** 2 * w).sum(), own[i], rtol=1e-6)
        cols = []
        for sign in (1, -1):  # log_price_i in the design; the released log_price fixed
            Xi = X.copy()
            Xi[i, 2] += sign * h
            cols.append(_later_means(spec, dataclasses.replace(data_j, X=Xi), fit, x_syn)[1])
        col = (cols[0] - cols[1]) / (2 * h)
        # the calibration's projection holds log_price too: its derivative is in the map
        np.testing.assert_allclose((col ** 2 * w).sum(), cross[i], rtol=1e-5)
        assert cross[i] > 0.01 * own[i]  # the earlier response does reach the later means


def test_noise_with_several_responses_refused_where_it_means_nothing():
    """Input noise: refused with a yes/no or count response (no closed-form leave-out
    predictive, and a 0/1 value plus noise is no longer one); mean noise: refused with several
    responses (a later response's calibration channel is not derived); input noise with two
    gaussian responses is accepted."""
    two = DataConfig(responses=[{"name": "a"}, {"name": "b"}])
    with pytest.raises(SpecError, match="input_noise.*yes/no response `s`.*closed-form"):
        ReleaseSpec(data=DataConfig(responses=[{"name": "a"}, {"name": "s",
                                                                "family": "bernoulli"}]),
                    sampling=SamplingConfig(sampler="grid"),
                    synthesis=SynthesisConfig(predictive="cross_fit", input_noise=0.2))
    with pytest.raises(SpecError, match="mean_noise.*data.responses.*not derived"):
        ReleaseSpec(data=two, synthesis=SynthesisConfig(predictive="cross_fit",
                                                        mean_noise=0.1))
    spec = ReleaseSpec(data=two, synthesis=SynthesisConfig(predictive="cross_fit",
                                                           input_noise=0.2))
    assert spec.synthesis.input_noise == 0.2
