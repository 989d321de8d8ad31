"""Issue 12, items 6–7: verified k after masking, the verified mask, choose-k without a source."""

from __future__ import annotations

import json
from pathlib import Path

import geopandas
import numpy as np
import pytest

import synthgeo
from synthgeo._errors import InputError, SpecError
from synthgeo.cli.main import main
from synthgeo.masking import ExcessNearSource, choose_k, evaluate_mask, mask_to_k
from synthgeo.masking.verify import WIDEN, WIDEN_AFTER, summarise_verified_k, verified_k

CRS = "EPSG:27700"
DATA = Path(synthgeo.__file__).parent / "data"
CHORLEY = str(DATA / "chorley_ribble_cancer.csv")
INPUTS = [CHORLEY, "--households", "synthgeo:chorley_ribble_cancer.csv", "--x", "x_km",
          "--y", "y_km", "--crs", CRS, "--coord-unit-m", "1000", "--id-col", "id",
          "--cases-query", "cancer == 'larynx'", "--households-query", "cancer == 'lung'",
          "--region", "synthgeo:chorley_ribble_window.csv"]


def _gs(xy):
    xy = np.asarray(xy, float)
    return geopandas.GeoSeries(geopandas.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)


@pytest.fixture(scope="module")
def layout():
    """60 cases at 60 of 3000 uniformly placed households on a 5 km square."""
    rng = np.random.default_rng(11)
    hh = rng.uniform(0, 5000, (3000, 2))
    cases = hh[rng.choice(3000, 60, replace=False)]
    return _gs(cases), _gs(hh), cases, hh


# --- the measure on hand-made layouts --------------------------------------------------------


def test_verified_k_counts_households_at_least_as_close_as_the_truth():
    # households on a 10 m grid line; the case lives at (0, 0)
    hh = np.array([[x, 0.0] for x in range(-40, 50, 10)])  # -40 .. 40
    true = np.array([[0.0, 0.0]])
    # masked to (25, 0), 25 m from the truth: 10, 20, 30, 40 are within 25 m of it (and
    # (0, 0), the case's own, at exactly 25 m) -> 1 + 4 = 5
    assert verified_k(true, np.array([[25.0, 0.0]]), hh).tolist() == [5.0]
    # masked 3 m off the line at x = 0: no household but its own within 3 m -> 1
    assert verified_k(true, np.array([[0.0, 3.0]]), hh).tolist() == [1.0]
    # (n_masks, n_cases) in, the same shape out. Masked to (-20, 0), 20 m from the truth:
    # -20 (0 m), -30 and -10 (10 m) are closer, -40 is exactly as close (20 m): a tie, outside
    # the circle of radius 20·cos(π/64) inscribed in MaskMyPy's 64-gon, not counted -> 1 + 3
    out = verified_k(true, np.array([[[25.0, 0.0]], [[-20.0, 0.0]]]), hh)
    assert out.shape == (2, 1) and out[:, 0].tolist() == [5.0, 4.0]


def test_verified_k_counts_within_the_circle_inscribed_in_maskmypys_64_gon():
    # a household 0.1 % inside the circle of radius 100 m but outside the inscribed circle
    # (radius 100·cos(π/64) = 99.88 m) is not counted: MaskMyPy's 64-gon may miss it
    true = np.array([[0.0, 0.0]])
    masked = np.array([[100.0, 0.0]])
    angle = np.pi / 64  # on the bisector of a 64-gon edge starting at angle 0: outside it
    hh = np.array([[100.0 + 99.9 * np.cos(np.pi - angle), 99.9 * np.sin(np.pi - angle)]])
    assert verified_k(true, masked, hh).tolist() == [1.0]
    hh_in = np.array([[100.0 - 99.8, 0.0]])
    assert verified_k(true, masked, hh_in).tolist() == [2.0]


def test_verified_k_without_the_own_household_and_with_weights():
    hh = np.array([[10.0, 0.0], [20.0, 0.0], [30.0, 0.0]])
    true = np.array([[0.0, 0.0]])  # its household is not in the layer: +1 for it
    assert verified_k(true, np.array([[20.0, 0.0]]), hh).tolist() == [4.0]
    # weights: households per point are summed (the point at 30 m holds 5)
    assert verified_k(true, np.array([[20.0, 0.0]]), hh,
                      weights=np.array([1.0, 1.0, 5.0])).tolist() == [8.0]
    with pytest.raises(InputError, match="must have shape"):
        verified_k(true, np.zeros((2, 2)), hh)
    s = summarise_verified_k(np.array([1.0, 3.0, 5.0, 8.0]), 5)
    assert (s["median"], s["n_below_k"], s["min"]) == (4.0, 2, 1.0)


# --- masks -----------------------------------------------------------------------------------


def test_unverified_mask_reports_its_verified_k(layout):
    cases, hh, cxy, hxy = layout
    m = mask_to_k(cases, hh, k=10, random_seed=3)
    mxy = np.column_stack([m.masked.geometry.x, m.masked.geometry.y])
    np.testing.assert_array_equal(m.verified_k, verified_k(cxy, mxy, hxy))
    assert m.verification is None and not m.verified
    assert 0.3 < np.mean(m.verified_k < 10) < 1  # the donut's k is not the attacker's
    ev = evaluate_mask(cases, m, households=hh, n_attacks=5, random_seed=1)
    assert ev.verified_k["n_below_k"] == int((m.verified_k < 10).sum())
    assert ev.to_dict()["verified_k"]["k"] == 10


def test_verified_mask_reaches_k_for_every_case(layout):
    cases, hh, cxy, hxy = layout
    m = mask_to_k(cases, hh, k=10, random_seed=3, verify=True)
    mxy = np.column_stack([m.masked.geometry.x, m.masked.geometry.y])
    vk = verified_k(cxy, mxy, hxy)
    assert (vk >= 10).all() and (m.verified_k >= 10).all()
    v = m.verification
    assert v["n_redraws"] > 0 and v["max_redraws"] == 100 and v["k"] == 10
    assert 1 <= v["rounds"] <= 100
    again = mask_to_k(cases, hh, k=10, random_seed=3, verify=True)
    np.testing.assert_array_equal(again.masked.geometry.x, m.masked.geometry.x)  # seeded


def test_unreachable_annulus_is_widened_and_the_bound_refuses():
    # the case at (0, 0) with its k - 1 = 2 nearest households on opposite sides (r_k = 10 m):
    # no point 5-10 m away has both nearer than the truth; (30, 0) is reachable only once the
    # annulus reaches 15 m, after two widenings (x1.25 each)
    hh = np.array([[0.0, 0.0], [-10.0, 0.0], [10.0, 0.0], [30.0, 0.0]])
    cases = _gs([[0.0, 0.0]])
    m = mask_to_k(cases, _gs(hh), k=3, random_seed=5, verify=True, max_verify_redraws=400)
    assert m.r_k_m[0] == 10.0 and m.verified_k[0] >= 3
    v = m.verification
    assert v["n_widened"] == 1 and v["max_annulus_scale"] >= WIDEN ** 2
    assert v["rounds"] >= 2 * WIDEN_AFTER and m.displacement_m[0] > 15.0 - 1e-9
    with pytest.raises(InputError, match=r"after 5 redraws, 1 case\(s\) \(e.g. \[0\]\) still "
                                         r"have a verified k below 3.*--max-verify-redraws"):
        mask_to_k(cases, _gs(hh), k=3, random_seed=5, verify=True, max_verify_redraws=5)


# --- choose-k ----------------------------------------------------------------------------------


def test_attacker_only_sweep(layout):
    cases, hh, _, _ = layout
    res = choose_k(cases, hh, utility=None, k_grid=(5, 20, 100, 300), n_replicates=10,
                   max_attacker_success=0.8, random_seed=2, progressbar=False,
                   methods=("donut",), method_aware=False)
    t = res.table
    assert t["detection_rate"].isna().all() and t["meets_detection_target"].all()
    assert res.utility == {"attacker_only": True}
    assert t["attacker_success"].iloc[1] > 0.8 >= t["attacker_success"].iloc[2]
    assert res.chosen_k == 100 and res.finding.startswith("Attacker only (no utility test): "
                                                          "donut mask: k = 100 is the smallest k")
    assert (t["verified_k_share_below_k"] > 0).all()
    ver = choose_k(cases, hh, utility=None, k_grid=(5,), n_replicates=5, random_seed=2,
                   progressbar=False, verify=True)
    assert ver.table["verified_k_share_below_k"].iloc[0] == 0 and ver.verified
    assert ver.table["verify_redraw_share"].iloc[0] > 0
    assert ver.to_record()["mask"]["verified"] is True


def test_preregistered_source_without_excess_is_kept_and_reported(layout):
    cases, hh, _, _ = layout
    far = ExcessNearSource.from_households(hh, source_xy_m=(20_000.0, 20_000.0), radius_m=100)
    with pytest.raises(SpecError, match=r"does not pass on the true locations.*--preregistered"):
        choose_k(cases, hh, utility=far, k_grid=(5,), n_replicates=5, progressbar=False)
    res = choose_k(cases, hh, utility=far, k_grid=(5, 10), n_replicates=10, random_seed=1,
                   progressbar=False, preregistered=True)
    assert res.utility["passes_on_true_locations"] is False and res.utility["preregistered"]
    t = res.table
    np.testing.assert_allclose(t["agreement_rate"], 1 - t["detection_rate"])
    assert res.notes[0].startswith("pre-registered test: the true locations show no excess")
    assert "no-excess agreement" in res.finding


def test_choose_k_cli_attacker_only_and_its_refusals(tmp_path, capsys):
    out = tmp_path / "ck"
    assert main(["choose-k", *INPUTS, "--attacker-only", "--replicates", "5", "--out",
                 str(out), "--k-grid", "5,20"]) == 0
    text = capsys.readouterr().out
    assert "attacker only, no utility test" in text and "verified_k" in text
    rec = json.loads((out / "choose_k.json").read_text())
    assert rec["utility"] == {"attacker_only": True}
    assert {"verified_k_median", "verified_k_share_below_k"} <= set(rec["sweep"][0])
    for extra, match in ((["--attacker-only", "--source", "354.5,413.6", "--radius-m", "2000"],
                          "drop `--source`"), ([], "or `--attacker-only`")):
        assert main(["choose-k", *INPUTS, *extra, "--out", str(tmp_path / "x")]) == 1
        assert match in capsys.readouterr().err
        assert not (tmp_path / "x").exists()


def test_mask_cli_verify(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["mask", *INPUTS, "--k", "10", "--verify", "--seed", "81462390571122",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verified mask:" in text and "0 of 58 cases below k = 10" in text
    side = json.loads((out / "mask.json").read_text())
    assert side["verification"]["max_redraws"] == 100
    assert side["evaluation"]["verified_k"]["min"] >= 10
    public = json.loads((out / "release" / "masking.json").read_text())
    assert "verified k >= k" in public["verified"]
