"""Selection on one set of posterior draws, judgement on independent ones (issue 24, item 3)."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.risk.fresh_draws import fresh_draw_judgement, group_figures
from synthgeo.risk.measure import Measure
from synthgeo.risk.noise import z_value
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import within_probability
from synthgeo.synthesis.implicates import (
    draw_implicates,
    implicate_draw_index,
    selection_draw_index,
)
from synthgeo.testing import fake_fit

L = 50
MEASURE = Measure(kind="abs", tol=0.1)
THRESHOLD = 0.10


def test_selection_draws_are_disjoint_from_the_implicates_and_need_two_L():
    for n_chain, n_draw, n in [(2, 1000, 100), (2, 50, 50), (4, 25, 7), (1, 9, 4)]:
        imp = implicate_draw_index(n_chain, n_draw, n)
        sel = selection_draw_index(n_chain, n_draw, n)
        assert sel.size == n and np.unique(sel).size == n
        assert not np.intersect1d(imp, sel).size
        assert sel.min() >= 0 and sel.max() < n_chain * n_draw
    # spread over the whole sample (both chains), not a block at one end
    sel = selection_draw_index(2, 1000, 100)
    assert sel.min() < 50 and sel.max() > 1950 and (sel >= 1000).sum() == 50
    with pytest.raises(ValueError, match=r"at least 102 retained posterior draws.*\[sampling\] "
                                         r"draws"):
        selection_draw_index(2, 50, 51)


def test_implicates_can_be_drawn_at_given_posterior_draws():
    fit = fake_fit()
    post = fit.posterior
    n_draw = post.sizes["draw"]
    X = np.ones((4, 2))
    sel = selection_draw_index(post.sizes["chain"], n_draw, 5)
    ds = draw_implicates(fit, X, n_implicates=5, random_seed=1, draw_index=sel)
    chain, draw = np.divmod(sel, n_draw)
    np.testing.assert_array_equal(ds["source_chain"].values, post["chain"].values[chain])
    np.testing.assert_array_equal(ds["source_draw"].values, post["draw"].values[draw])
    default = draw_implicates(fit, X, n_implicates=5, random_seed=1)
    assert not np.array_equal(default["y_mean"].values, ds["y_mean"].values)
    with pytest.raises(ValueError, match="distinct flattened posterior draws"):
        draw_implicates(fit, X, n_implicates=5, random_seed=1, draw_index=sel[:4])
    with pytest.raises(ValueError, match="distinct flattened posterior draws"):
        draw_implicates(fit, X, n_implicates=2, random_seed=1, draw_index=np.array([3, 3]))


def test_group_figures_and_statuses():
    a, se = np.array([0.30, 0.11, 0.02, 0.0]), np.array([0.01, 0.05, 0.01, 0.01])
    sel = np.array([True, True, True, False])
    f = group_figures(a, se, sel, THRESHOLD, n_rows=L)
    assert (f["n_records"], f["n_above"], f["n_certain"], f["n_possible"]) == (3, 2, 1, 2)
    assert f["largest"] == pytest.approx(0.30) and f["mean"] == pytest.approx(0.43 / 3)
    assert f["largest_upper"] > 0.30
    empty = group_figures(a, se, np.zeros(4, bool), THRESHOLD)
    assert empty["n_records"] == 0 and empty["mean"] is None
    j = fresh_draw_judgement(np.zeros(4, bool), (a, se), {"unrestricted": (a, se),
                                                          "restricted": (a, se)},
                             threshold=THRESHOLD, measure="abs:0.1")
    assert j.status == "NOTHING SELECTED" and j.regression_to_mean is None
    with pytest.raises(ValueError, match="restricted"):
        fresh_draw_judgement(sel, (a, se), {"unrestricted": (a, se)}, threshold=THRESHOLD,
                             measure="abs:0.1")


class _World:
    """Posterior draws of a release that leaks 20 records' values, and a y-free baseline.

    Each call of :meth:`draws` is a fresh set of L posterior draws: the release's predictive
    (records 0-19 centred within 0.05 of y_i: high risk; the others' centre 0.8 away) and the
    leave-one-out baseline's (never near y_i).
    """

    def __init__(self, n: int = 300, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.n = n
        self.y = rng.normal(0.0, 1.0, n)
        self.offset = np.where(np.arange(n) < 20, 0.0, 0.8) * rng.choice([-1, 1], n)

    def draws(self, rng) -> dict[str, Predictive]:
        jitter = rng.normal(0.0, 0.05, (L, self.n))
        release = Predictive(mean=self.y + self.offset + jitter, sd=np.full((L, self.n), 0.1))
        baseline = Predictive(mean=self.y + 0.8 + rng.normal(0.0, 0.05, (L, self.n)),
                              sd=np.full((L, self.n), 0.3))
        return {"release": release, "baseline": baseline}

    def attributable(self, release: Predictive, baseline: Predictive):
        """a_i = r̃(release) − r̃(baseline), se from the paired per-draw differences."""
        p = within_probability(release, self.y, MEASURE, "identity")
        b = within_probability(baseline, self.y, MEASURE, "identity")
        d = p - b
        return d.mean(axis=0), d.std(axis=0, ddof=1) / np.sqrt(L)


def _copy_baseline(release: Predictive, baseline: Predictive, selected) -> Predictive:
    """The cheating mechanism: the selected records' predictive replaced by the baseline's."""
    mean, sd = release.mean.copy(), release.sd.copy()
    mean[:, selected], sd[:, selected] = baseline.mean[:, selected], baseline.sd[:, selected]
    return Predictive(mean=mean, sd=sd)


def test_a_mechanism_that_copies_the_baseline_into_the_judged_draws_cannot_pass():
    """In-sample it passes by construction; judged on fresh draws it fails.

    The mechanism protects nothing: it writes the baseline's predictive into the draws it was
    shown (the selection draws) for the records selected there, and leaves every other draw
    of the release as it was. An honest mechanism (the selected records' release no nearer
    than the baseline on every draw) passes on the fresh draws.
    """
    world = _World()
    a_draws = world.draws(np.random.default_rng(1))  # the selection draws
    b_draws = world.draws(np.random.default_rng(2))  # fresh: independent posterior draws
    a_sel, se_sel = world.attributable(a_draws["release"], a_draws["baseline"])
    selected = a_sel + z_value(0.95, L) * se_sel > THRESHOLD
    assert selected[:20].all()  # the leaking records are found
    kw = dict(threshold=THRESHOLD, measure=MEASURE.key, n_rows=L)
    # in-sample: the cheat is judged on the draws it rewrote, a_i = 0 exactly: PASS
    cheat_in = _copy_baseline(a_draws["release"], a_draws["baseline"], selected)
    in_sample = fresh_draw_judgement(
        selected, (a_sel, se_sel),
        {"unrestricted": (a_sel, se_sel),
         "restricted": world.attributable(cheat_in, a_draws["baseline"])}, **kw)
    assert in_sample.status == "PASS"
    assert in_sample.figures["fresh_restricted"]["largest"] == 0.0
    # fresh draws: the release the cheat leaves is the leaking one there: FAIL
    a_fresh = world.attributable(b_draws["release"], b_draws["baseline"])
    fresh = fresh_draw_judgement(selected, (a_sel, se_sel),
                                 {"unrestricted": a_fresh, "restricted": a_fresh}, **kw)
    assert fresh.status == "FAIL"
    assert fresh.figures["fresh_restricted"]["n_certain"] >= 20
    # an honest mechanism protects the selected records on every draw: PASS on fresh draws
    honest = _copy_baseline(b_draws["release"], world.draws(np.random.default_rng(3))[
        "baseline"], selected)
    judged = fresh_draw_judgement(
        selected, (a_sel, se_sel),
        {"unrestricted": a_fresh,
         "restricted": world.attributable(honest, b_draws["baseline"])}, **kw)
    assert judged.status == "PASS"
    d = judged.to_dict()
    assert set(d) >= {"selection_unrestricted", "fresh_unrestricted", "fresh_restricted",
                      "regression_to_mean", "status"}


def test_regression_to_the_mean_shows_on_fresh_draws():
    """Records selected on noise (no real risk) fall back on fresh draws of the same model."""
    rng = np.random.default_rng(4)
    n = 5000
    truth = np.full(n, 0.05)
    se = np.full(n, 0.03)
    a_sel = truth + rng.normal(0.0, 0.03, n)
    a_fresh = truth + rng.normal(0.0, 0.03, n)
    selected = a_sel + z_value(0.95, L) * se > THRESHOLD
    j = fresh_draw_judgement(selected, (a_sel, se), {"unrestricted": (a_fresh, se),
                                                     "restricted": (a_fresh, se)},
                             threshold=THRESHOLD, measure="abs:0.1", n_rows=L)
    assert selected.sum() > 100
    assert j.regression_to_mean > 0.02  # selected on a high draw, ≈ truth on fresh ones
    assert j.figures["fresh_unrestricted"]["mean"] == pytest.approx(0.05, abs=0.01)
