"""The front door: ``import synthgeo as sg``, ``sg.read_points``, ``sg.synthesize``, ``sg.run``.

Done-when of issue 14: the spec route and the in-memory route write the same ``release/``
bytes; a notebook-style job runs from a GeoDataFrame built in memory, with no file.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest

import synthgeo as sg
from synthgeo.api import spec_for_points
from synthgeo.config import bundled_spec_path
from synthgeo.io.provenance import frame_sha256

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the pages whose ```python block is the front door as users copy it: the README's short one
#: and docs/usage.md's full one (the README's until issue 22); both must run as they stand
PYTHON_PAGES = (README, ROOT / "docs" / "usage.md")


def _sha256s(folder: Path) -> dict[str, str]:
    return {f.relative_to(folder).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(folder.rglob("*")) if f.is_file()}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the bundled file's known duplicate sale
        return fn(*args, **kwargs)


def _read_as_spec(spec):
    d = spec.data
    return _quiet(sg.read_points, d.path, x=d.x, y=d.y, crs=d.crs, id=d.id, query=d.query,
                  target_crs=d.target_crs, drop_duplicates=d.drop_duplicates)


def _synthesize_as_spec(spec, points, **kwargs):
    d = spec.data
    return sg.synthesize(points, response=d.response, covariates=d.covariates,
                         back_transform=d.back_transform, subject=d.subject, model=spec.model,
                         sampling=spec.sampling, synthesis=spec.synthesis, risk=spec.risk,
                         utility=spec.utility, anonymity=spec.anonymity, **kwargs)


# --- import synthgeo ---------------------------------------------------------------------------


def test_import_is_fast_and_light():
    code = ("import sys, time; t = time.perf_counter(); import synthgeo; "
            "print(time.perf_counter() - t); "
            "print(sorted(m for m in ('numpy', 'pandas', 'geopandas', 'pymc', 'xarray') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                         text=True, check=True)
    seconds, heavy = out.stdout.split("\n")[:2]
    assert heavy == "[]"
    # -X importtime: "import time: self [us] | cumulative [us] | name"
    cumulative = [int(line.split("|")[1]) for line in out.stderr.splitlines()
                  if line.rstrip().endswith("| synthgeo")]
    assert cumulative and cumulative[0] < 1_000_000, out.stderr[-2000:]
    assert float(seconds) < 1.0


def test_every_public_name_resolves_lazily():
    for name in sg.__all__:
        assert getattr(sg, name) is not None, name
    assert set(sg.__all__) <= set(dir(sg))
    assert sg.spatial_k.__name__ == "measure_spatial_k"
    assert sg.outlier_policy.__name__ == "apply_outlier_policy"
    assert sg.mask.__name__ == "mask_to_k"
    assert sg.SamplingConfig().sampler == "grid"
    with pytest.raises(AttributeError, match="has no attribute 'SamplerConfig'"):
        sg.SamplerConfig  # noqa: B018 - renamed to SamplingConfig ([sampling])


def test_show_versions(capsys):
    assert sg.show_versions() is None
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"synthgeo {sg.__version__}"  # as `synthgeo --version`
    assert sg.show_versions(as_dict=True)["python"]


# --- done when: the two routes write the same release/ -----------------------------------------


def test_spec_route_and_in_memory_route_write_the_same_release(tmp_path):
    spec = sg.load_spec(bundled_spec_path()).replace("sampling", sampler="grid")
    spec = spec.replace("synthesis", n_implicates=10)
    by_spec = _quiet(sg.run, spec)
    points = _read_as_spec(spec)
    in_memory = _synthesize_as_spec(spec, points)
    a = by_spec.write(tmp_path / "spec")
    b = in_memory.write(tmp_path / "memory")
    release_a, release_b = _sha256s(a / "release"), _sha256s(b / "release")
    assert len(release_a) == 1 + 10 + 1  # implicates.parquet, 10 CSVs, README.md
    assert release_a == release_b
    assert _sha256s(a / "confidential") == _sha256s(b / "confidential")
    rec_a = json.loads((a / "release.json").read_text(encoding="utf-8"))
    rec_b = json.loads((b / "release.json").read_text(encoding="utf-8"))
    assert rec_a["release_files"] == rec_b["release_files"]
    assert rec_a["input"] == rec_b["input"]  # the file's path and hash: the frame is unchanged
    assert rec_a["input"]["frame_sha256"] == frame_sha256(points)
    assert rec_a["spec"]["data"] == rec_b["spec"]["data"]
    assert rec_b["spec"]["source"] is None
    assert rec_a["crs"] == rec_b["crs"] and rec_a["warnings"] == rec_b["warnings"]
    assert rec_a["crs"]["coordinate_unit"]["name"] == "degree"
    assert "exact_duplicates" in [w["code"] for w in rec_a["warnings"]]  # the file's one
    # and the result objects agree
    xr_a, xr_b = by_spec.implicates, in_memory.implicates
    np.testing.assert_array_equal(xr_a["restricted"].values, xr_b["restricted"].values)


def test_fake_fitter_routes_agree(tmp_path):
    from synthgeo.testing import fake_fitter, fake_spec

    spec = fake_spec(sg.load_spec(bundled_spec_path()), n_draws=150, n_implicates=4)
    a = _quiet(sg.run, spec, fitter=fake_fitter(n_draws=150)).write(tmp_path / "a")
    points = _read_as_spec(spec)
    b = _quiet(_synthesize_as_spec, spec, points, fitter=fake_fitter(n_draws=150))
    b = b.write(tmp_path / "b")
    assert _sha256s(a / "release") == _sha256s(b / "release")


@pytest.mark.slow
def test_bundled_spec_by_both_routes_nuts(tmp_path):
    spec = sg.load_spec(bundled_spec_path())
    a = _quiet(sg.run, spec).write(tmp_path / "spec")
    b = _quiet(_synthesize_as_spec, spec, _read_as_spec(spec)).write(tmp_path / "memory")
    assert _sha256s(a / "release") == _sha256s(b / "release")


# --- the job from a GeoDataFrame built in memory (a notebook) ----------------------------------


@pytest.fixture(scope="module")
def homes() -> geopandas.GeoDataFrame:
    """Eighty sales around Sacramento in lon/lat degrees, simulated: no file anywhere."""
    from synthgeo.testing import simulate_gp

    sim = simulate_gp(80, extent_m=4000.0, phi_per_m=3e-3, random_seed=7)
    lon = -121.45 + sim["coords_m"][:, 0] / 87_000.0  # ~ metres per degree at 38.6°N
    lat = 38.55 + sim["coords_m"][:, 1] / 111_000.0
    return geopandas.GeoDataFrame(
        {"sale": [f"s{i:03d}" for i in range(80)], "log_price": 12.0 + sim["y"],
         "sqft": 1000.0 + 300.0 * sim["X"][:, 1], "lon": lon, "lat": lat},
        geometry=geopandas.points_from_xy(lon, lat), crs="EPSG:4326")


def test_notebook_job_from_a_geodataframe_in_memory(homes, tmp_path):
    before = frame_sha256(homes)
    rel = sg.synthesize(homes, response="log_price", covariates=["sqft"], id="sale",
                        x="lon", y="lat", implicates=6, seed=3,
                        sampling=sg.SamplingConfig(sampler="grid"),
                        model=sg.ModelConfig(gamma="inf"), risk=sg.RiskConfig(eps=[20_000.0]))
    assert frame_sha256(homes) == before and homes.crs.to_epsg() == 4326  # input untouched
    imp = rel.implicates
    assert dict(imp.sizes) == {"implicate": 6, "record": 80}
    assert set(imp.data_vars) == {"unrestricted", "restricted"}
    assert list(imp["record"].values) == list(homes["sale"])
    assert imp["at_risk"].dtype == bool and imp.attrs["response"] == "log_price"
    post = rel.posterior["restricted"].posterior
    assert {"beta", "sigma2", "nugget", "range", "phi"} <= set(post.data_vars)
    risk = rel.risk.to_dataframe()
    assert len(risk) == 80 and "share[abs:20000]_restricted" in risk
    assert risk["at_risk"].sum() == rel.at_risk.sum() == rel.result.at_risk.n_at_risk
    assert rel.risk["restricted"].n_implicates == 6
    assert set(rel.reiter["model"]) == {"confidential", "unrestricted", "restricted"}
    assert rel.spec.sampling.seed == 3 and rel.spec.synthesis.n_implicates == 6
    # displaying the objects in a notebook shows counts and verdicts, no confidential value
    for obj in (rel, rel.result, rel.result.data, rel.risk):
        text = repr(obj)
        assert len(text) < 400 and "confidential contents not shown" in text
        assert "s000" not in text and "array" not in text and "seed" not in text
        assert f"{homes['log_price'].iloc[0]:.4f}"[:6] not in text
    assert repr(rel).startswith("Release(n_records=80, n_at_risk=")
    # the verdicts and key figures without reaching into the result
    assert rel.verdicts == {"location": rel.result.locations.verdict.status,
                            "risk": "NOT ASSESSED"}
    summ = rel.summary()
    assert list(summ.columns) == ["figure", "model", "value"]
    got = dict(zip(summ["figure"] + "/" + summ["model"], summ["value"], strict=True))
    assert got["records/"] == 80 and got["risk verdict/"] == "NOT ASSESSED"
    table = rel.result.risk_scores.table.query("group == 'all' and attack == 'share'")
    largest = table.set_index(["measure", "model"])["largest_attributable"]
    assert got["attributable risk, largest [abs:20000]/restricted"] == pytest.approx(
        largest[("abs:20000", "restricted")])
    assert got["smallest Reiter CI overlap/restricted"] == pytest.approx(
        rel.reiter.query("model == 'restricted'")["ci_overlap"].min())
    page = rel._repr_html_()
    assert "<table" in page and "risk verdict" in page and len(page) < 4000
    assert f"{homes['log_price'].iloc[0]:.4f}"[:6] not in page

    out = rel.write(tmp_path / "out")
    assert {p.name for p in out.iterdir()} == {"release", "confidential", "release.json",
                                               "report.html"}
    released = pd.read_parquet(out / "release" / "implicates.parquet")
    assert list(released.columns[:5]) == ["implicate", "sale", "lon", "lat", "sqft"]
    first = released[released["implicate"] == 1]
    assert first["sale"].tolist() == list(range(1, 81))  # release pseudonyms, random order
    sale = pd.read_csv(out / "confidential" / "release_ids.csv")["sale"]  # the confidential ids
    np.testing.assert_allclose(first["log_price"],
                               imp["restricted"].sel(implicate=1, record=sale.values).values)
    np.testing.assert_allclose(first["lon"], homes.set_index("sale").loc[sale, "lon"])
    rec = json.loads((out / "release.json").read_text(encoding="utf-8"))
    assert rec["input"] == {"path": None, "sha256": None, "n_read": 80, "n_duplicates": 0,
                            "query": None, "frame_sha256": before}
    assert rec["spec"]["data"]["path"] is None and rec["spec"]["source"] is None
    assert rec["crs"]["projected"] == "WGS 84 / UTM zone 10N"
    # the checks a file gets, and their record: the unit of lon/lat, no coded warning
    assert rec["crs"]["coordinate_unit"] == {"metres_per_unit": None, "name": "degree",
                                             "source": "geometry", "scale_to_crs": 1.0}
    assert pyproj.CRS.from_wkt(rec["crs"]["source"]).to_epsg() == 4326
    # no coded warning of the data; the only ones are the small seed (3) of an unsigned
    # release and that any seed below 2^64 can be searched
    assert [w["code"] for w in rec["warnings"]] == ["small_unsigned_seed", "guessable_seed"]
    # the report and the data users' README name no file: there is none
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "GeoDataFrame in memory" in report and before in report
    assert "data file" not in report and "None" not in report.split("table-overview")[1][:3000]
    readme = (out / "release" / "README.md").read_text(encoding="utf-8")
    assert "confidential file" not in readme and "80 confidential records" in readme


def test_one_log_response_given_as_data_responses_is_released_in_its_own_units(homes, tmp_path):
    """`responses=[{"name": "price", "transform": "log"}]` is `[data] transform = "log"`.

    Issue 22: one gaussian `[[data.responses]]` entry went down the single-response route,
    which read only `[data] transform`, and released log-dollars under the dollar column's name.
    """
    from synthgeo.api import spec_for_points
    from synthgeo.pipeline import run_release

    pts = homes.assign(price=np.exp(homes["log_price"])).drop(columns="log_price")
    common = dict(covariates=["sqft"], id="sale", implicates=4, seed=2,
                  sampling=sg.SamplingConfig(sampler="grid"), risk=sg.RiskConfig(eps=[20_000.0]))
    as_entry = sg.synthesize(pts, responses=[{"name": "price", "transform": "log"}], **common)
    spec = spec_for_points(pts, response="price", **common)
    as_key = sg.Release(result=run_release(spec.replace("data", transform="log"), points=pts))
    a, b = as_entry.write(tmp_path / "entry"), as_key.write(tmp_path / "key")
    released = pd.read_parquet(a / "release" / "implicates.parquet")["price"]
    assert released.mean() > 1_000.0  # dollars, not log-dollars (~12)
    assert _sha256s(a / "release") == _sha256s(b / "release")
    assert _sha256s(a / "confidential") == _sha256s(b / "confidential")
    assert as_entry.result.spec.formula == "log(price) ~ sqft"


def test_in_memory_data_get_the_plausibility_checks(homes):
    from synthgeo.api import spec_for_points
    from synthgeo.pipeline.data import prepare_data

    lon0, lat0 = -121.45, 38.55  # the same 80 sales shrunk into a 40 m square
    tiny = homes.set_geometry(geopandas.points_from_xy(lon0 + (homes["lon"] - lon0) / 100,
                                                       lat0 + (homes["lat"] - lat0) / 100))
    with pytest.raises(sg.InputError, match=r"the 80 points \(80 distinct locations\) span "
                       r"only .* m .*If the extent is real, pass `accept_small_extent=True`"):
        sg.synthesize(tiny, response="log_price", covariates=["sqft"], id="sale")
    spec = spec_for_points(tiny, response="log_price", covariates=["sqft"], id="sale",
                           accept_small_extent=True)
    assert spec.data.accept_small_extent is True
    with pytest.warns(UserWarning, match="accepted by `accept_small_extent`"):
        data = prepare_data(spec, tiny)
    assert [w["code"] for w in data.gdf.attrs["warnings"]] == ["small_extent"]
    swapped = homes.set_geometry(geopandas.points_from_xy(homes["lat"], homes["lon"]))
    with pytest.raises(sg.InputError, match=r"latitude \(geometry\) outside \[-90, 90\] in "
                                            r"WGS 84.*`sale` \['s000'"):
        sg.synthesize(swapped, response="log_price", id="sale")


def test_a_frame_changed_after_reading_names_no_file():
    spec = sg.load_spec(bundled_spec_path())
    points = _read_as_spec(spec)
    from synthgeo.api import spec_for_points
    from synthgeo.io.read import check_points_frame

    same = spec_for_points(points, response="log_price", covariates=["sqft_living"])
    assert same.data.path == "synthgeo:sacramento_home_sales.csv"
    assert same.data.query == "beds == 2" and same.data.id == "id" and same.data.x == "lon"
    cheap = points[points["sqft_living"] < 1000]
    changed = spec_for_points(cheap, response="log_price", covariates=["sqft_living"])
    assert changed.data.path is None and changed.data.query is None
    assert changed.data.x == "lon" and changed.data.id == "id"  # the columns are still there
    attrs = check_points_frame(cheap, id_column="id").attrs
    assert attrs["path"] is None and attrs["sha256"] is None
    assert attrs["n_read"] == len(cheap) and attrs["frame_sha256"] == frame_sha256(cheap)


def test_synthesize_shortcuts_and_refusals(homes):
    from synthgeo.api import spec_for_points

    spec = spec_for_points(homes, response="log_price", covariates=["sqft"], seed=1,
                           implicates=7, formula="log_price ~ sqft",
                           sampling=sg.SamplingConfig(sampler="grid", seed=5))
    assert spec.sampling.seed == 1 and spec.sampling.sampler == "grid"  # the shortcut wins
    assert spec.synthesis.n_implicates == 7 and spec.utility.formula == "log_price ~ sqft"
    with pytest.raises(TypeError, match="`sampling` must be a synthgeo.SamplingConfig, got dict"):
        sg.synthesize(homes, response="log_price", sampling={"sampler": "grid"})
    with pytest.raises(TypeError, match=r"`covariates` must be a list of column names, got the "
                                        r"string 'sqft'; write \['sqft'\]"):  # not s, q, f, t
        sg.synthesize(homes, response="log_price", covariates="sqft")
    with pytest.raises(TypeError, match="must be a geopandas.GeoDataFrame, got DataFrame"):
        sg.synthesize(pd.DataFrame(homes.drop(columns="geometry")), response="log_price")
    with pytest.raises(sg.InputError, match="the GeoDataFrame has no CRS"):
        sg.synthesize(homes.set_crs(None, allow_override=True), response="log_price")
    with pytest.raises(sg.SpecError, match=r"`\[synthesis\] n_implicates` must be an integer"):
        sg.synthesize(homes, response="log_price", implicates=1)
    bad = homes.assign(sqft=homes["sqft"].astype(object))
    bad.loc[3, "sqft"] = "n/a"
    with pytest.raises(sg.InputError, match=r"numeric column `sqft` holds text.*in 1 record"):
        sg.synthesize(bad, response="log_price", covariates=["sqft"], id="sale")
    with pytest.raises(sg.InputError, match=r"id column `sale` is not unique: \['s000'\]"):
        sg.synthesize(homes.assign(sale="s000"), response="log_price", id="sale")
    with pytest.raises(sg.InputError, match=r"column\(s\) \['rooms'\] not found"):
        sg.synthesize(homes, response="log_price", covariates=["rooms"])


def test_run_takes_a_spec_path_and_refuses_a_missing_one(tmp_path):
    with pytest.raises(sg.SpecError, match=r"spec file .*nope\.toml.* does not exist"):
        sg.run(tmp_path / "nope.toml")


# --- README --------------------------------------------------------------------------------------


def _page_python(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, f"{page.name} should hold one ```python block (the front door)"
    return blocks[0]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_readme_python_block_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(_page_python(page), str(page), "exec"), namespace)  # noqa: S102
    rel = namespace["rel"]
    assert isinstance(rel, sg.Release)
    assert (tmp_path / "synthgeo-py-out" / "release" / "implicates.parquet").is_file()


# --- the command line is a layer over the front door ---------------------------------------------


def test_run_compare_validate_share_one_declaration_of_their_options():
    import argparse

    from synthgeo.cli.main import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))

    def options(name):
        return {a.dest: (a.help, a.metavar, a.choices, a.type) for a in sub.choices[name]._actions}

    run, compare, validate = options("run"), options("compare"), options("validate")
    shared = ["spec", "draws", "tune", "chains", "seed", "implicates", "on_convergence_failure",
              "overwrite"]
    for dest in shared:
        assert run[dest] == compare[dest], dest
    assert validate["spec"] == run["spec"]
    # each command's own option: compare's frontier; run's earlier release, register, key and
    # exit code (--strict: a FAIL under "warn" exits non-zero after writing, issue 26)
    own = {"previous", "register", "key_file", "allow_unsigned"}
    assert set(run) - set(compare) == own | {"strict"}
    assert set(compare) - set(run) == {"frontier"}
    # and the front door takes each of run's own options under the same name
    import inspect

    assert own <= set(inspect.signature(sg.run).parameters)


# --- every [data] key through the front door -------------------------------------------------

#: a value other than the default for each [data] key (issue 26: anything a spec's [data] can
#: say, sg.synthesize can say)
_DATA_VALUES = {
    "response": "price", "path": "homes.csv", "covariates": ["sqft"], "x": "lon", "y": "lat",
    "crs": "EPSG:4326", "id": "sale", "query": "sqft > 0", "back_transform": "identity",
    "transform": "log", "subject": "owner", "target_crs": "EPSG:32610",
    "drop_duplicates": True, "coord_unit_m": 1000.0, "sep": ";", "decimal": ",",
    "encoding": "latin-1", "thousands": ".", "accept_small_extent": True,
    "responses": [{"name": "price", "transform": "log"}], "missing": "drop",
    "max_dropped_share": 0.2, "on_drop_failure": "warn",
    "release_ids": "original", "study_area": [-122.0, 38.0, -121.0, 39.0],
    "accept_offshore": True,
    "accept_repeated_records": True,
}


def test_every_data_key_is_reachable_from_synthesize():
    import dataclasses
    import inspect

    fields = [f.name for f in dataclasses.fields(sg.DataConfig)]
    assert sorted(_DATA_VALUES) == sorted(fields), "a new [data] key needs a value here"
    assert "data" in inspect.signature(sg.synthesize).parameters
    pts = geopandas.GeoDataFrame({"price": [1.0]}, geometry=geopandas.points_from_xy([0], [0]),
                                 crs="EPSG:32610")
    for key, value in _DATA_VALUES.items():
        extra = {} if key in ("response", "responses") else {"response": "price"}
        if key == "transform":
            extra["back_transform"] = None
        if key == "back_transform":
            extra = {"response": "price"}
        pts_k = pts
        companion = {"x": {"y": "lat"}, "y": {"x": "lon"},
                     "coord_unit_m": {"x": "lon", "y": "lat"},
                     "decimal": {"sep": ";"},
                     "thousands": {"sep": ";", "decimal": ","}}.get(key, {})
        spec = spec_for_points(pts_k, data={key: value, **companion}, **extra)
        got = getattr(spec.data, key)
        if key == "responses":
            got = [{"name": r.name, "transform": r.transform} for r in got]
        assert got == value, key
    # the keyword shortcuts still win over the section
    spec = spec_for_points(pts, response="price", data={"response": "other"})
    assert spec.data.response == "price"
    # and the dollar column modelled on the log scale, said directly
    assert spec_for_points(pts, response="price", transform="log").data.transform == "log"
    with pytest.raises(TypeError, match=r"unknown \[data\] key\(s\) \['respnse'\]"):
        spec_for_points(pts, data={"respnse": "price"})
