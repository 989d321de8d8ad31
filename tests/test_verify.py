"""``synthgeo verify`` / ``sg.verify`` (issue 27 item 2) on a quick release of the bundled spec."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import synthgeo as sg
from synthgeo._errors import InputError, SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.testing import fake_fitter, fake_spec
from synthgeo.utility.reiter import fit_ols
from synthgeo.verification.analysis import check_records_behind_terms
from synthgeo.verification.budget import BudgetStore
from synthgeo.verification.privacy import laplace_scale, partition, release_means

SPEC_MODEL = "log_price ~ sqft_living"
OTHER_MODEL = "log_price ~ np.log(sqft_living)"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A fake-fitter release of the bundled spec (5 implicates, seconds)."""
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sg.run(spec, fitter=fake_fitter(n_draws=100))
    return res.write(tmp_path_factory.mktemp("verify") / "out")


@pytest.fixture()
def store(tmp_path):
    return tmp_path / "budget.sqlite"


def _confidential():
    df = pd.read_csv(bundled_spec_path().parent / "sacramento_home_sales.csv")
    return df.query("beds == 2").reset_index(drop=True)


@pytest.mark.parametrize("formula", [SPEC_MODEL, OTHER_MODEL])
def test_dp_answer_states_noise_and_charges_budget(release, store, formula):
    res = sg.verify(release, formula, analyst="ana", budget=3.0, epsilon=1.0, store=store,
                    seed=1)
    d = res.to_dict()
    assert d["mode"] == "dp" and d["epsilon"] == 1.0
    m, k = d["n_subsets"], len(d["measures"])
    assert m == 140 // 25 and k == 2
    assert d["sensitivity"] == pytest.approx(3 * k / m)
    assert d["laplace_scale"] == pytest.approx(3 * k / (m * 1.0))
    assert d["noise_sd"] == pytest.approx(np.sqrt(2) * d["laplace_scale"])
    for row in d["measures"]:
        for key in ("ci_overlap", "sign_agreement", "significance_agreement"):
            assert 0.0 <= row[key] <= 1.0
    assert d["budget"] == {"total": 3.0, "spent": 1.0, "remaining": 2.0}
    sg.verify(release, formula, analyst="ana", epsilon=0.5, store=store, seed=2)
    assert BudgetStore(store).remaining("ana") == pytest.approx(1.5)


def test_dp_measures_near_exact_at_large_epsilon(release, store):
    """At ε = 1e6 the noise vanishes: the shares are the subsets' own (sign of sqft agrees)."""
    res = sg.verify(release, SPEC_MODEL, analyst="ana", budget=1e7, epsilon=1e6, store=store,
                    seed=3)
    assert res.measures.loc["sqft_living", "sign_agreement"] == pytest.approx(1.0, abs=1e-4)
    shares = res.measures.to_numpy() * res.n_subsets
    np.testing.assert_allclose(shares[:, 1:], np.round(shares[:, 1:]), atol=1e-3)


def test_spent_budget_refuses_and_every_request_is_logged(release, store):
    sg.verify(release, SPEC_MODEL, analyst="bob", budget=1.5, epsilon=1.0, store=store, seed=1)
    with pytest.raises(InputError, match="would exceed it: only ε = "):
        sg.verify(release, SPEC_MODEL, analyst="bob", epsilon=1.0, store=store, seed=1)
    with pytest.raises(InputError, match="has no privacy budget"):
        sg.verify(release, SPEC_MODEL, analyst="carol", epsilon=1.0, store=store, seed=1)
    log = BudgetStore(store).requests()
    assert log["status"].tolist() == ["granted", "refused", "refused"]
    assert log["analyst"].tolist() == ["bob", "bob", "carol"]
    assert log["epsilon"].iloc[0] == 1.0 and log["epsilon"].iloc[1:].isna().all()
    assert "would exceed it" in log["reason"].iloc[1]
    assert BudgetStore(store).spent("bob") == 1.0  # the refusal charged nothing


@pytest.mark.parametrize("formula", [
    "log_price ~ I(sqft_living == 904)",  # 4 records < k = 5
    "log_price ~ I(sqft_living >= 904) + I(sqft_living > 904)",  # their difference: the same 4
    "log_price ~ sqft_living + I(sqft_living * (sqft_living == 904))",
])
def test_isolating_term_refused(release, store, formula):
    with pytest.raises(InputError, match=r"fewer than k = 5 records") as err:
        sg.verify(release, formula, analyst="ana", budget=5.0, store=store, seed=1)
    assert "\n" not in str(err.value)
    log = BudgetStore(store).requests()
    assert log["status"].tolist() == ["refused"] and BudgetStore(store).spent("ana") == 0


@pytest.mark.parametrize("formula", [
    "log_price ~ __import__('os').system('touch x')",
    "log_price ~ sqft_living.__class__",
    "log_price ~ (lambda s: s)(sqft_living)",
    "log_price ~ np.linalg.det(sqft_living)",
    "log_price ~ os.system(1)",
    "log_price ~ sqft_living + log_price",  # the confidential response on the right side
    "log_price ~ price_usd",  # a column that is not released
    # break-it 2026-12-07: full-width letters, which Python reads (NFKC) as exec, chr, len, str
    "log_price ~ I(sqft_living + 0*ｌｅｎ(ｓｔｒ(ｅｘｅｃ("
    + "+".join(f"ｃｈｒ({ord(c)})" for c in "open(chr(120),chr(119))") + "))))",
])
def test_code_bearing_formula_refused(release, store, tmp_path, monkeypatch, formula):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as err:
        sg.verify(release, formula, analyst="ana", budget=5.0, store=store, seed=1)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "x").exists()
    assert BudgetStore(store).requests()["status"].tolist() == ["refused"]


@pytest.mark.parametrize("formula, said", [
    ("sqft_living ~ log_price", r"its left side names `sqft_living`, but the release's response "
                                r"is `log_price`"),
    ("price_usd ~ sqft_living", r"its left side names `price_usd`, but the release's response "
                                r"is `log_price`"),
    ("np.log(sqft_living) ~ 1", r"its left side names `sqft_living`, but the release's "
                                r"response is `log_price`"),
    ("log_price ~ sqft_living + log_price", r"its right side names the release's response "
                                            r"`log_price` \(confidential\); .*\['sqft_living'\]"),
])
def test_formula_sides_name_the_column_and_the_response(release, store, formula, said):
    """Review: the refusal named neither the column at fault nor the release's response."""
    with pytest.raises(SpecError, match=said) as err:
        sg.verify(release, formula, analyst="ana", budget=5.0, store=store, seed=1)
    assert "\n" not in str(err.value)
    assert BudgetStore(store).spent("ana") == 0


def test_changed_confidential_file_refused(release, store, tmp_path):
    src = bundled_spec_path().parent / "sacramento_home_sales.csv"
    changed = tmp_path / "sales.csv"
    shutil.copy(src, changed)
    with changed.open("a", encoding="utf-8") as f:
        f.write("\n")
    with pytest.raises(InputError, match="SHA-256 differs"):
        sg.verify(release, SPEC_MODEL, analyst="ana", budget=5.0, store=store, data=changed)
    with pytest.raises(InputError, match=r"confidential file .* is a folder: .*--data PATH"):
        sg.verify(release, SPEC_MODEL, analyst="ana", budget=5.0, store=store, data=tmp_path)
    same = tmp_path / "same.csv"
    shutil.copy(src, same)  # the same bytes elsewhere: accepted
    assert sg.verify(release, SPEC_MODEL, analyst="ana", store=store, data=same, seed=1)


def test_answer_holds_no_confidential_estimate(release, store):
    conf = fit_ols(SPEC_MODEL, _confidential())
    secrets = np.concatenate([conf.params, conf.bse, conf.lower, conf.upper])
    for kw in ({"seed": 1}, {"non_private_reason": "agency check of the test suite"}):
        res = sg.verify(release, SPEC_MODEL, analyst="ana", budget=5.0, store=store, **kw)
        text = json.dumps(res.to_dict()) + repr(res)
        numbers = [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]
        for s in secrets:
            assert f"{s:.4g}" not in text
            assert not any(np.isclose(x, s, rtol=1e-6, atol=0) for x in numbers)


def test_non_private_needs_a_reason_and_is_logged(release, store):
    with pytest.raises(InputError, match="reason"):
        sg.verify(release, SPEC_MODEL, analyst="ana", store=store, non_private_reason=" ")
    res = sg.verify(release, SPEC_MODEL, analyst="ana", store=store,
                    non_private_reason="board request 12")
    assert res.mode == "non_private" and res.epsilon is None and res.laplace_scale is None
    assert res.measures.loc["sqft_living", "sign_agreement"] == 1.0
    log = BudgetStore(store).requests()
    assert log["mode"].tolist()[-1] == "non_private"
    assert log["reason"].tolist()[-1] == "board request 12"


def test_cli_verify(release, store, tmp_path, capsys):
    from synthgeo.cli.main import main

    analysis = tmp_path / "analysis.toml"
    analysis.write_text(f'formula = "{OTHER_MODEL}"\nfamily = "gaussian"\n', encoding="utf-8")
    out = tmp_path / "answer.json"
    rc = main(["verify", str(release), str(analysis), "--analyst", "dan", "--budget", "2",
               "--epsilon", "0.5", "--store", str(store), "--seed", "4", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert "Laplace scale" in printed.out and "remaining 1.5" in printed.out
    assert json.loads(out.read_text())["epsilon"] == 0.5
    rc = main(["verify", str(release), "--formula", "log_price ~ I(sqft_living == 904)",
               "--analyst", "dan", "--store", str(store)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and err.startswith("synthgeo: error: term")


def test_records_behind_terms_rules():
    x = np.repeat(np.arange(10.0), 3)  # 30 records, 3 per value
    one = np.ones_like(x)
    check_records_behind_terms(np.column_stack([one, x]), ["Intercept", "x"], 5)
    with pytest.raises(InputError, match="single out one record"):
        y = np.arange(30.0)
        check_records_behind_terms(np.column_stack([one, y, (y == 7) * y + (y == 7)]),
                                   ["Intercept", "y", "t"], 1)


def test_privacy_mechanism():
    groups = partition(103, 5, np.random.default_rng(0))
    assert sorted(np.bincount(groups).tolist()) == [20, 20, 21, 21, 21]
    assert laplace_scale(6, 5, 0.5) == pytest.approx(2.4)
    # the noise's spread is the stated scale (Laplace: mean |noise| = b)
    rng = np.random.default_rng(1)
    draws = np.array([release_means(np.full((10, 1), 0.5), 100.0, rng)[0][0]
                      for _ in range(4000)])
    assert np.mean(np.abs(draws - 0.5)) == pytest.approx(1 / (10 * 100.0), rel=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1, 2, 0.0)


@pytest.mark.parametrize("name", ["analysis", "privacy", "measures", "budget", "api"])
def test_doctests(name):
    """The examples in the verification modules' docstrings run as written."""
    import doctest
    import importlib

    module = importlib.import_module(f"synthgeo.verification.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and (result.attempted > 0 or name == "api")


def test_logistic_family(release, store):
    """A bernoulli (logit) model on a 0/1 left side: the exact measures agree in sign."""
    res = sg.verify(release, "I(log_price > 11.5) ~ sqft_living", family="bernoulli",
                    analyst="ana", store=store, non_private_reason="logistic check")
    assert res.family == "bernoulli" and list(res.measures.index) == ["Intercept", "sqft_living"]
    assert res.measures.loc["sqft_living", "sign_agreement"] == 1.0


def test_budget_store_concurrent_charges(tmp_path):
    """Eight requests of ε = 0.3 at once against a total of 1: exactly three are granted."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "b.sqlite"
    BudgetStore(path).set_total("eve", 1.0)

    def ask(_):
        try:
            BudgetStore(path).charge("eve", 0.3, formula="y ~ x", family="gaussian")
            return True
        except InputError:
            return False

    with ThreadPoolExecutor(8) as pool:
        granted = list(pool.map(ask, range(8)))
    assert sum(granted) == 3
    assert BudgetStore(path).spent("eve") == pytest.approx(0.9)


def test_front_door_verify_is_the_function():
    """``sg.verify`` is the function, also after the package is imported (no name clash)."""
    import synthgeo.verification.api  # noqa: F401

    assert callable(sg.verify) and sg.verify.__name__ == "verify"
    with pytest.raises(InputError, match="name the analyst"):
        sg.verify("/nonexistent", SPEC_MODEL, analyst=" ")


@pytest.mark.slow
def test_verify_on_the_bundled_nuts_release(bundled_release, tmp_path):
    """Done when: the bundled release (NUTS/grid run, 20 implicates), the spec's model and one
    not in the spec; noise stated, the budget decreases."""
    store = tmp_path / "b.sqlite"
    for formula in (SPEC_MODEL, OTHER_MODEL):
        res = sg.verify(bundled_release, formula, analyst="ana", budget=2.0, epsilon=1.0,
                        store=store, seed=5)
        assert res.laplace_scale == pytest.approx(6 / 5) and res.n_subsets == 5
        assert res.measures.shape == (2, 3)
    assert BudgetStore(store).remaining("ana") == pytest.approx(0.0)
    with pytest.raises(InputError, match="would exceed it: only ε = "):
        sg.verify(bundled_release, SPEC_MODEL, analyst="ana", store=store)


def test_changed_release_refused(release, store, tmp_path):
    """A released file changed after release is refused before anything is fitted."""
    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    csv = copy / "release" / "csv" / "implicate_001.csv"
    csv.write_text(csv.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^verify .*implicate_001.csv does not match"):
        sg.verify(copy, SPEC_MODEL, analyst="ana", budget=1.0, store=store)
    assert BudgetStore(store).requests()["status"].tolist() == ["refused"]


@pytest.mark.parametrize("kw, match", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": "1"}, "epsilon"), ({"epsilon": True}, "epsilon"),
    ({"n_subsets": 1}, "subsets"), ({"n_subsets": 2.5}, "subsets"),
    ({"n_subsets": 70}, "subsets"),
])
def test_bad_settings_refused(release, store, kw, match):
    """ε and M are checked; nothing is charged."""
    with pytest.raises(InputError, match=match):
        sg.verify(release, SPEC_MODEL, analyst="ana", budget=5.0, store=store, **kw)
    assert BudgetStore(store).spent("ana") == 0.0


def test_unidentified_subset_scores_zero():
    """A subset whose design is not of full rank (x constant there; statsmodels would still
    give finite pseudo-inverse estimates) scores 0; an identified one does not."""
    from synthgeo.utility.reiter import combine_reiter
    from synthgeo.verification.analysis import Analysis
    from synthgeo.verification.measures import subset_measures

    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(size=30), np.ones(30)]  # subset 1: x constant
    frame = pd.DataFrame({"x": x, "y": 1.0 + 2.0 * x + rng.normal(size=60)})
    groups = np.repeat([0, 1], 30)
    syn = combine_reiter([[1.0, 2.0], [1.1, 2.1]], [[0.01, 0.01], [0.01, 0.01]],
                         names=["Intercept", "x"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per = subset_measures(Analysis("y ~ x", alpha=0.05), frame, groups, syn, n_coef=2)
    assert np.all(per[1] == 0)
    assert per[0, 2:4].tolist() == [1.0, 1.0]  # signs agree in the identified subset


def test_alpha_from_the_analysis_file_or_the_release(release, store, tmp_path):
    """``alpha`` in the ANALYSIS file is used; without it, the release's ``[utility] alpha``."""
    from synthgeo.verification.analysis import load_analysis

    f = tmp_path / "a.toml"
    f.write_text(f'formula = "{SPEC_MODEL}"\nalpha = 0.1\n', encoding="utf-8")
    res = sg.verify(release, analysis=load_analysis(f), analyst="ana", budget=5.0, store=store,
                    seed=1)
    assert res.alpha == 0.1
    assert sg.verify(release, SPEC_MODEL, analyst="ana", store=store, seed=1).alpha == 0.05
