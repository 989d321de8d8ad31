"""Input checks left over from the break-it trial (2026-12-07): reading a points file.

A wrong projected CRS, non-ASCII thousands separators, UTF-16 files, header names with spaces,
and a register path that is a link or a folder. Each refusal is one line naming the option that
fixes it, and shows no confidential value.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest

from synthgeo._errors import InputError
from synthgeo.cli.main import main
from synthgeo.io.points import load_points
from synthgeo.io.read import check_points_frame
from synthgeo.register.store import open_register

N = 30


def _sales(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(N), "lon": -121.5 + rng.uniform(0, 0.2, N),
                         "lat": 38.5 + rng.uniform(0, 0.2, N),
                         "price": rng.integers(100_000, 900_000, N)})


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("synthgeo: warning")]
    assert len(lines) == 1 and lines[0].startswith("synthgeo: error:"), err
    return lines[0]


# --- item 1: a wrong projected CRS ----------------------------------------------------------


def _amsterdam_utm(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """Write 60 points near Amsterdam in UTM zone 31N metres; return the file and lon/lat."""
    rng = np.random.default_rng(0)
    lon, lat = 4.85 + rng.uniform(0, 0.15, 60), 52.33 + rng.uniform(0, 0.08, 60)
    x, y = pyproj.Transformer.from_crs(4326, 32631, always_xy=True).transform(lon, lat)
    path = tmp_path / "ams.csv"
    pd.DataFrame({"id": np.arange(60), "x": x, "y": y}).to_csv(path, index=False)
    return path, lon, lat


@pytest.mark.parametrize("crs", ["EPSG:3857", "EPSG:3395", "EPSG:4087"])
def test_utm_metres_labelled_with_a_world_wide_crs_are_refused(tmp_path, capsys, crs):
    """Break-it: UTM 31N labelled EPSG:3857 was read, every distance at 0.69 of its length."""
    path, _, _ = _amsterdam_utm(tmp_path)
    with pytest.raises(InputError, match=r"^all 60 points have x within 160–840 km and y within "
                                         r"0–10,000 km, the ranges of UTM eastings .*area of use "
                                         r"is the world .*reads at about 0.[78] of its length; "
                                         r"if they are UTM, set `crs` .*`study_area`") as err:
        load_points(path, x="x", y="y", crs=crs, id_column="id")
    assert "\n" not in str(err.value) and "52." not in str(err.value)
    frame = pd.read_csv(path)
    gdf = geopandas.GeoDataFrame(frame, crs=crs,
                                 geometry=geopandas.points_from_xy(frame.x, frame.y))
    with pytest.raises(InputError, match=r"gdf.set_crs\(\"EPSG:326ZZ\".*`study_area="):
        check_points_frame(gdf, id_column="id")
    from synthgeo.locations import measure_spatial_k

    if crs == "EPSG:3857":  # the diagnostics check (and project) a frame not in metres too
        with pytest.raises(InputError, match="ranges of UTM eastings"):
            measure_spatial_k(gdf, 100.0)
    out = tmp_path / "out"
    assert main(["kanon", str(path), "--x", "x", "--y", "y", "--crs", crs, "--id", "id",
                 "--radius-m", "100", "--out", str(out)]) == 1
    assert "ranges of UTM eastings" in _one_error_line(capsys) and not out.exists()
    # the right CRS reads them
    assert len(load_points(path, x="x", y="y", crs="EPSG:32631", id_column="id")) == 60


def test_a_declared_study_area_decides_for_utm_shaped_web_mercator(tmp_path):
    """Web Mercator near Paris is UTM-shaped too: a declared study area lets it through."""
    rng = np.random.default_rng(1)
    lon, lat = 2.30 + rng.uniform(0, 0.1, 60), 48.82 + rng.uniform(0, 0.06, 60)
    x, y = pyproj.Transformer.from_crs(4326, 3857, always_xy=True).transform(lon, lat)
    path = tmp_path / "paris.csv"
    pd.DataFrame({"id": np.arange(60), "x": x, "y": y}).to_csv(path, index=False)
    with pytest.raises(InputError, match="ranges of UTM eastings"):
        load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")
    gdf = load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id",
                      study_area=[2.2, 48.7, 2.5, 49.0])
    back = gdf.geometry.to_crs(4326)
    assert np.allclose(back.x, lon) and np.allclose(back.y, lat)
    # the Amsterdam UTM file labelled 3857 lands 6° south of Amsterdam: the area refuses it
    ams, _, _ = _amsterdam_utm(tmp_path)
    with pytest.raises(InputError, match="study"):
        load_points(ams, x="x", y="y", crs="EPSG:3857", id_column="id",
                    study_area=[4.7, 52.2, 5.2, 52.5])
    # Web Mercator elsewhere (Sacramento) is not UTM-shaped: read as before
    sx, sy = pyproj.Transformer.from_crs(4326, 3857, always_xy=True).transform(
        -121.5 + lon - 2.3, 38.5 + lat - 48.82)
    sac = tmp_path / "sac.csv"
    pd.DataFrame({"id": np.arange(60), "x": sx, "y": sy}).to_csv(sac, index=False)
    assert load_points(sac, x="x", y="y", crs="EPSG:3857", id_column="id").crs.to_epsg() == 32610


def test_world_mercator_is_never_the_distance_crs(tmp_path):
    """World Mercator (EPSG:3395) reads a distance d as d / cos φ, as Web Mercator does: under
    ``target_crs = "local"`` (kanon's and outliers' default) it was kept and measured in."""
    rng = np.random.default_rng(0)
    lon, lat = 13.3 + rng.uniform(0, 0.1, 60), 52.45 + rng.uniform(0, 0.06, 60)  # Berlin
    x, y = pyproj.Transformer.from_crs(4326, 3395, always_xy=True).transform(lon, lat)
    path = tmp_path / "wm.csv"
    pd.DataFrame({"x": x, "y": y}).to_csv(path, index=False)
    for target in ("utm", "local"):
        gdf = load_points(path, x="x", y="y", crs="EPSG:3395", target_crs=target)
        assert gdf.crs.to_epsg() == 32633
    with pytest.raises(InputError, match=r"`target_crs` = 'EPSG:3395' is a Mercator projection"):
        load_points(path, x="x", y="y", crs="EPSG:3395", target_crs="EPSG:3395")
    frame = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(x, y), crs=3395)
    from synthgeo.locations import measure_spatial_k

    got = measure_spatial_k(frame, 100.0, k=5, k_max=None)
    assert pyproj.CRS(got.crs_wkt).to_epsg() == 32633  # projected first, not measured in 3395


@pytest.mark.parametrize("crs", ["EPSG:2154", "EPSG:27700", "EPSG:28992", "EPSG:3035"])
def test_utm_metres_labelled_with_a_national_grid_are_refused(tmp_path, crs):
    """A CRS with a bounded area of use refuses them already (projected bounds, area of use)."""
    path, _, _ = _amsterdam_utm(tmp_path)
    with pytest.raises(InputError, match=r"outside the (projected bounds|area of use)"):
        load_points(path, x="x", y="y", crs=crs, id_column="id")


# --- item 2: a non-ASCII thousands separator -----------------------------------------------


def _grouped_csv(tmp_path: Path, sep_char: str) -> tuple[Path, pd.DataFrame]:
    """Write a French-style export: ``;``, decimal commas, prices grouped by `sep_char`."""
    frame = _sales()
    rows = "".join(
        f"{r.id};{str(r.lon).replace('.', ',')};{str(r.lat).replace('.', ',')};"
        f"{r.price // 1000}{sep_char}{r.price % 1000:03d}\n" for r in frame.itertuples())
    path = tmp_path / "fr.csv"
    path.write_text("id;lon;lat;price\n" + rows, encoding="utf-8")
    return path, frame


@pytest.mark.parametrize("char", ["\u00a0", "\u202f"])
def test_a_no_break_space_thousands_separator_is_honoured(tmp_path, char):
    path, frame = _grouped_csv(tmp_path, char)
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      thousands=char, numeric_columns=["price"], id_column="id")
    assert gdf["price"].tolist() == frame["price"].tolist()
    assert np.allclose(gdf["lon"], frame["lon"])  # the decimal commas too


@pytest.mark.parametrize(("char", "named"), [("\u00a0", "U+00A0"), ("\u202f", "U+202F")])
def test_space_grouped_numbers_without_the_option_name_it(tmp_path, capsys, char, named):
    path, _ = _grouped_csv(tmp_path, char)
    for given in (None, " "):  # left out, or an ordinary space given for a no-break one
        match = (rf"numeric column `price` holds text .* grouped by a .*no-break space "
                 rf"\({re.escape(named)}.*set `thousands` \(\[data\] thousands, or --thousands\)")
        with pytest.raises(InputError, match=match) as err:
            load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                        thousands=given, numeric_columns=["price"], id_column="id")
        assert "\n" not in str(err.value) and "000" not in str(err.value)
    assert main(["kanon", str(path), "--x", "lon", "--y", "lat", "--crs", "EPSG:4326",
                 "--sep", ";", "--decimal", ",", "--thousands", char, "--id", "id",
                 "--radius-m", "100", "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(("char", "named", "escaped"), [
    (" ", "a space", '" "'), ("\u00a0", "U+00A0", '"\\u00a0"'),
    ("\u202f", "U+202F", '"\\u202f"')])
def test_the_thousands_hint_names_the_separator_found(tmp_path, char, named, escaped):
    """Break-it 2026-12-07: the hint for a frame in memory always said to remove U+00A0."""
    path, _ = _grouped_csv(tmp_path, char)
    with pytest.raises(InputError) as err:  # a file: the option with the character found
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    numeric_columns=["price"], id_column="id")
    assert named in str(err.value) and f"`thousands = {escaped}`" in str(err.value)
    frame = pd.read_csv(path, sep=";", decimal=",", dtype={"price": str})
    gdf = geopandas.GeoDataFrame(frame, crs="EPSG:4326",
                                 geometry=geopandas.points_from_xy(frame.lon, frame.lat))
    with pytest.raises(InputError) as err:  # in memory: the replace of that character
        check_points_frame(gdf, id_column="id", numeric_columns=["price"])
    msg = str(err.value)
    assert named in msg and f"s.str.replace({escaped}, \"\")" in msg
    others = [c for c in ("\\u00a0", "\\u202f") if c not in escaped]
    assert not any(o in msg for o in others), msg


# --- item 3: UTF-16 -------------------------------------------------------------------------


@pytest.mark.parametrize(("written", "named", "how"), [
    ("utf-16", "utf-16", "starts with a UTF-16 byte-order mark"),
    ("utf-32", "utf-32", "starts with a UTF-32 byte-order mark"),
    ("utf-16-le", "utf-16-le", "has NUL bytes between its characters"),
])
@pytest.mark.parametrize("given", ["utf-8", "latin-1"])
def test_a_utf16_file_names_its_encoding(tmp_path, capsys, written, named, how, given):
    path = tmp_path / "wide.csv"
    _sales().to_csv(path, index=False, encoding=written)
    with pytest.raises(InputError, match=rf"^the CSV wide.csv is {named.upper()} text \(it "
                                         rf"{how}\), not {given}: set `encoding` \(\[data\] "
                                         rf'encoding, or --encoding\) to "{named}", or re-save '
                                         "the file as UTF-8$"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", encoding=given)
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", encoding=named, id_column="id")
    assert gdf["price"].tolist() == _sales()["price"].tolist()
    out = tmp_path / "out"
    assert main(["kanon", str(path), "--x", "lon", "--y", "lat", "--crs", "EPSG:4326",
                 "--encoding", given, "--radius-m", "100", "--out", str(out)]) == 1
    assert 'to "' + named + '"' in _one_error_line(capsys) and not out.exists()


# --- item 4: header names with spaces -----------------------------------------------------


@pytest.mark.parametrize(("written", "asked", "how"), [
    ("proﬁt", "profit", "not by case"),          # a ligature: casefold reads it as "fi"
    ("ｐｒｏｆｉｔ", "profit", "not by case"),     # full-width letters
    ("Proﬁt", "profit", "and by case"),
])
def test_a_ligature_in_a_header_is_named_as_a_compatibility_form(tmp_path, written, asked, how):
    """Break-it 2026-12-07: a header written with "ﬁ" was called "in other case"."""
    path = tmp_path / "lig.csv"
    _sales().rename(columns={"price": written}).to_csv(path, index=False, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=[asked])
    msg = str(err.value)
    assert (f"it has {written!r} (differs by Unicode compatibility form (NFKC: a ligature such "
            f"as 'ﬁ', or a full-width or superscript character) {how}".replace(") not", "), not")
            in msg), msg
    assert "other case" not in msg


def test_the_default_formula_is_not_called_the_utility_formula(tmp_path):
    """Break-it 2026-12-07: with no `[utility] formula` written, a covariate named with a
    ligature was refused as "`[utility] formula` holds compatibility characters"."""
    from synthgeo import SpecError
    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline import prepare_data

    spec = load_spec(bundled_spec_path())
    raw = pd.read_csv(spec.data_path()).rename(columns={"sqft_living": "surface_ﬁ"})
    path = tmp_path / "lig.csv"
    raw.to_csv(path, index=False, encoding="utf-8")
    spec = spec.replace("data", path=str(path), covariates=["surface_ﬁ"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SpecError, match=r"^the default formula \(response ~ covariates\) "
                                            r"holds compatibility characters"):
            prepare_data(spec.replace("utility", formula=None))
        with pytest.raises(SpecError, match=r"^`\[utility\] formula` holds compatibility"):
            prepare_data(spec.replace("utility", formula="log_price ~ surface_ﬁ"))


def test_a_column_name_with_spaces_is_named_as_the_near_match(tmp_path, capsys):
    path = tmp_path / "spaced.csv"
    frame = _sales().rename(columns={"price": "price "})
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"column\(s\) \['price'\] not found in spaced.csv; it "
                                         r"has 'price ' \(with trailing space\(s\)\) for "
                                         r"`price`: give the name exactly as written"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=["price"])
    with pytest.raises(InputError, match=r"'price ' \(in other case and with spaces\) for "
                                         r"`Price`"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=["Price"])
    with pytest.raises(InputError, match=r"\['beds'\] not found in spaced.csv; available"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=["beds"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=["price "])
    assert len(gdf) == N


def test_the_location_tools_name_the_near_match_too():
    from synthgeo.locations._inputs import check_columns

    gdf = geopandas.GeoDataFrame({" beds": [1, 2]}, crs="EPSG:32610",
                                 geometry=geopandas.points_from_xy([0.0, 1.0], [0.0, 1.0]))
    with pytest.raises(InputError, match=r"group_by column\(s\) \['beds'\] not found; it has "
                                         r"' beds' \(with leading space\(s\)\)"):
        check_columns(gdf, ["beds"], "group_by")


# --- item 5: --register at a link or a folder ---------------------------------------------


def test_a_register_path_that_is_a_link_or_a_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SYNTHGEO_REGISTER", raising=False)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder.sqlite").mkdir()
    (tmp_path / "x.csv").write_text("a,b\n")
    (tmp_path / "link.sqlite").symlink_to(tmp_path / "x.csv")
    (tmp_path / "dangling.sqlite").symlink_to(tmp_path / "nowhere.sqlite")
    (tmp_path / "loop.sqlite").symlink_to(tmp_path / "loop.sqlite")
    (tmp_path / "loopd").symlink_to(tmp_path / "loopd")
    cases = {"folder": "is a folder", "folder.sqlite": "is a folder",
             "link.sqlite": "is a symbolic link", "dangling.sqlite": "is a symbolic link",
             "loop.sqlite": "is a symbolic link", "loopd/r.sqlite": "cannot be resolved",
             "x.csv": "a register is a SQLite file named"}
    for name, says in cases.items():
        given = str(tmp_path / name)
        with pytest.raises(InputError, match=rf"^--register '{given}':? {says}"):
            open_register(given)
        assert main(["releases", "--register", given]) == 1
        assert says in _one_error_line(capsys)
    assert not (tmp_path / "nowhere.sqlite").exists()  # nothing written through the link
    with pytest.raises(InputError, match="^--register is empty"):
        open_register("")


def test_one_mistyped_easting_does_not_let_utm_values_through(tmp_path):
    """Break-it 2026-12-07: the check used np.all, so one easting with a digit too many (or too
    few) skipped the refusal; at least half UTM-shaped is refused (a 95 % share let 6 % of
    mistyped eastings through), naming how many are not."""
    path, _, _ = _amsterdam_utm(tmp_path)
    frame = pd.read_csv(path)
    frame.loc[5, "x"] = frame.loc[5, "x"] * 10  # one digit too many: 6,280 km
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^59 of 60 points \(at least 50%; 1 not, a mistyped "
                                         r"value or two\?\) have x within 160–840 km") as err:
        load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")
    shown = str(err.value)
    assert "\n" not in shown and str(int(frame.loc[5, "x"]))[:4] not in shown
    frame.loc[6:14, "x"] = frame.loc[6:14, "x"] * 10  # 10 of 60 off: still refused
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^50 of 60 points \(at least 50%; 10 not"):
        load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")
    frame.loc[:35, "x"] = frame.loc[:35, "x"] * 10  # 36 of 60 off: under half, judged fine
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")
        except InputError as other:  # another check may refuse them; not this one
            assert "ranges of UTM eastings" not in str(other)


@pytest.mark.parametrize("crs", ["EPSG:3857", "EPSG:4087"])
def test_values_beyond_the_world_are_refused_whatever_the_share(tmp_path, crs):
    """Break-it 2026-12-07: UTM metres labelled EPSG:3857 with 60 % of the eastings mistyped
    passed (40 % UTM-shaped is under the share); an easting with two digits too many (6,300 km
    x 10) lies past the world's edge, where PROJ wraps the longitude: impossible, refused."""
    path, _, _ = _amsterdam_utm(tmp_path)
    frame = pd.read_csv(path)
    frame.loc[:35, "x"] = frame.loc[:35, "x"] * 100  # 36 of 60 off: under half UTM-shaped
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^x \(column `x`\) of 36 of 60 points, at `id` "
                                         r"\[0, 1, 2, 3, 4\], \.\.\., is beyond the world's "
                                         r"extent in .*whatever share") as err:
        load_points(path, x="x", y="y", crs=crs, id_column="id")
    assert "\n" not in str(err.value) and str(int(frame.loc[0, "x"]))[:4] not in str(err.value)
    gdf = geopandas.GeoDataFrame(frame, crs=crs,
                                 geometry=geopandas.points_from_xy(frame.x, frame.y))
    with pytest.raises(InputError, match=r"^x \(geometry\) of 36 of 60 .*beyond the world"):
        check_points_frame(gdf, id_column="id")
    # a single such value is as impossible; values inside the world still pass this check
    one = frame.assign(x=frame.x.where(frame.index != 0, 2.5e7))
    one.loc[1:, "x"] = -1.35e7 + 1e3 * np.arange(59)  # inside: Sacramento's longitudes
    one.loc[1:, "y"] = 4.65e6 + 1e3 * np.arange(59)
    one.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^x \(column `x`\) of 1 of 60 points"):
        load_points(path, x="x", y="y", crs=crs, id_column="id")


def test_x_just_past_the_antimeridian_is_a_place_not_a_mistype(tmp_path):
    """Break-it 2026-12-07: Fiji at 179.8-180.3° in Web Mercator (a map panned across the
    antimeridian) was refused as beyond the world; up to 1° past the edge (the area-of-use
    check's widening) is allowed, PROJ wraps it; 10 times the easting is still refused."""
    import pyproj

    lon = np.linspace(179.8, 180.3, 40)
    lat = -17.0 + 0.01 * np.arange(40)
    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(
        np.where(lon > 180, 180, lon), lat)
    x = np.asarray(x) + (np.maximum(lon - 180, 0) * np.pi / 180 * 6378137.0)  # unwrapped
    path = tmp_path / "fiji.csv"
    pd.DataFrame({"id": range(40), "x": x, "y": y}).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id",
                               accept_offshore=True)) == 40
    pd.DataFrame({"id": range(40), "x": x * 10, "y": y}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"beyond the world's extent"):
        load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")


# --- thousands grouped by "." or by an apostrophe (break-it trial 2026-12-07) ---------------

SACRAMENTO = Path(__file__).resolve().parents[1] / "src" / "synthgeo" / "data" / \
    "sacramento_home_sales.csv"


def _sacramento_two_beds(tmp_path: Path, price) -> Path:
    frame = pd.read_csv(SACRAMENTO).query("beds == 2").drop_duplicates(
        subset=["lat", "lon", "price_usd"])
    frame["price_usd"] = frame["price_usd"].map(price)
    path = tmp_path / "sales.csv"
    frame.to_csv(path, index=False)
    return path


def _dots(v: int) -> str:
    return f"{v:,}".replace(",", ".")


def test_dot_grouped_prices_are_refused_not_read_as_decimals(tmp_path):
    """"59.222" for 59,222 (German or Danish exports) was read as 59.222: 1,000 times small."""
    path = _sacramento_two_beds(tmp_path, _dots)  # all prices between 1,000 and 999,999
    assert pd.read_csv(path)["price_usd"].dtype.kind == "f"  # what pandas makes of them
    kw = dict(x="lon", y="lat", crs="EPSG:4326", id_column="id",
              numeric_columns=["price_usd", "sqft_living"])
    with pytest.raises(InputError, match=r"^column `price_usd` of sales.csv holds numbers "
                                         r"written like 1.234 .*thousands = \"\.\"` and "
                                         r"`decimal = \",\"`") as err:
        load_points(path, **kw)
    frame = pd.read_csv(path, dtype=str)
    assert "\n" not in str(err.value) and frame["price_usd"].iloc[0] not in str(err.value)
    # a price under 1,000 is written whole: still refused; the real prices read as before
    frame.loc[frame.index[0], "price_usd"] = "950"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match="^column `price_usd`"):
        load_points(path, **kw)
    # one price left ungrouped among grouped ones (break-it trial): still refused
    frame.loc[frame.index[0], "price_usd"] = "59222"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match="^column `price_usd`"):
        load_points(path, **kw)
    plain = _sacramento_two_beds(tmp_path, int)
    assert load_points(plain, **kw)["price_usd"].min() > 1000


def test_a_typo_in_a_dot_grouped_column_does_not_clear_it(tmp_path):
    """Break-it trial 2026-12-08: one 59.2 among 59.222, 68.880, ... (a value with fewer than
    three decimals) cleared the rule, and every price was read 1,000 times too small."""
    kw = dict(x="lon", y="lat", crs="EPSG:4326", id_column="id", numeric_columns=["price_usd"])
    path = _sacramento_two_beds(tmp_path, _dots)
    frame = pd.read_csv(path, dtype=str)
    assert frame["price_usd"].str.fullmatch(r"\d+\.\d\d0").any()  # trailing zeros kept
    frame.loc[frame.index[3], "price_usd"] = "59.2"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^column `price_usd` of sales.csv holds numbers "
                                         r"written like 1.234 .*; 1 value\(s\), at data rows "
                                         r"\[3\] \(0-based, header excluded\), have fewer than "
                                         r"three digits .*correct them too") as err:
        load_points(path, **kw)
    assert "59.2" not in str(err.value) and "\n" not in str(err.value)
    # under decimal = ",": the same typo (1.16 among 1.167, 836 and 1.250)
    semi = tmp_path / "semi.csv"
    frame.assign(**{c: frame[c].str.replace(".", ",") for c in ("lon", "lat")}).to_csv(
        semi, sep=";", index=False)
    with pytest.raises(InputError, match=r'while `decimal` is ",".*`thousands = "\."`.*; 1 '
                                         r"value\(s\), at data rows \[3\]"):
        load_points(semi, **kw, sep=";", decimal=",")
    # two typos where one in a hundred values is allowed: read as decimals (a mixed column)
    n = len(frame)
    assert n < 200
    frame.loc[frame.index[5], "price_usd"] = "68.8"
    frame.to_csv(path, index=False)
    assert load_points(path, **kw)["price_usd"].max() < 1000.0


def test_decimals_without_trailing_zeros_are_not_taken_for_typos(tmp_path):
    """Genuine three-decimal measurements written without trailing zeros (7.5, 3.25 beside
    12.125): about one in ten has fewer places, and none ends in 0, so none is a typo."""
    kw = dict(x="lon", y="lat", crs="EPSG:4326", id_column="id", numeric_columns=["price_usd"])
    rng = np.random.default_rng(1)
    path = _sacramento_two_beds(
        tmp_path, lambda v: f"{rng.integers(1000, 999_000) / 1000:.3f}".rstrip("0"))
    written = pd.read_csv(path, dtype=str)["price_usd"]
    short = written.str.fullmatch(r"\d+\.\d{1,2}")
    assert 1 <= short.sum() <= 0.2 * len(written)  # some shorter, most with three places
    got = load_points(path, **kw)["price_usd"]
    assert got.max() < 1000.0 and np.allclose(got, written.astype(float))
    # every value with three places but one, none ending in 0: still decimals (no zero kept)
    path = _sacramento_two_beds(tmp_path, lambda v: f"{rng.integers(100, 99_900) * 10 + 7}")
    frame = pd.read_csv(path, dtype=str)
    frame["price_usd"] = frame["price_usd"].str.slice(0, -3) + "." + frame["price_usd"].str[-3:]
    frame.loc[frame.index[3], "price_usd"] = "59.2"
    frame.to_csv(path, index=False)
    assert load_points(path, **kw)["price_usd"].iloc[3] == 59.2


@pytest.mark.parametrize("sep,literal", [("'", "\"'\""), ("\u2019", '"\\u2019"')])
def test_apostrophe_grouping_names_its_separator(tmp_path, sep, literal):
    """Swiss exports write 59'222: the hint named only the comma reading's fix."""
    path = _sacramento_two_beds(tmp_path, lambda v: f"{v:,}".replace(",", sep))
    kw = dict(x="lon", y="lat", crs="EPSG:4326", id_column="id", numeric_columns=["price_usd"])
    with pytest.raises(InputError, match=r"grouped by an? .*\(\"59'222\", Swiss exports\): "
                                         rf"set `thousands = {re.escape(literal)}`"):
        load_points(path, **kw)
    got = load_points(path, **kw, thousands=sep)["price_usd"]
    assert got.min() > 1000 and got.dtype.kind in "if"


def test_several_dot_groups_name_the_thousands_option(tmp_path):
    """"1.234.567" is text to the reader: the hint said only "clean these values"."""
    path = _sacramento_two_beds(tmp_path, lambda v: _dots(v * 20))  # above a million, some
    kw = dict(x="lon", y="lat", crs="EPSG:4326", id_column="id", numeric_columns=["price_usd"])
    with pytest.raises(InputError, match=r"grouped by \"\.\" \(\"1\.234\.567\".*"
                                         r"`thousands = \"\.\"` and `decimal = \",\"`"):
        load_points(path, **kw)
    frame = pd.read_csv(path, dtype={"price_usd": str})
    gdf = geopandas.GeoDataFrame(frame, crs="EPSG:4326",
                                 geometry=geopandas.points_from_xy(frame.lon, frame.lat))
    with pytest.raises(InputError, match=r"grouped by \"\.\".*s\.str\.replace"):
        check_points_frame(gdf, id_column="id", numeric_columns=["price_usd"])
