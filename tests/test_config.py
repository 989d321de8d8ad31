"""The release spec (TOML → frozen dataclasses): bundled spec, defaults, and every refusal.

Fast: no model is fitted. ``prepare_data`` only reads and projects the 140 points.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from synthgeo import SpecError
from synthgeo.config import (
    AnonymityConfig,
    ComputeConfig,
    DataConfig,
    ModelConfig,
    ReleaseSpec,
    RiskConfig,
    SamplingConfig,
    SynthesisConfig,
    UtilityConfig,
    bundled_spec_path,
    load_spec,
)

REPO = Path(__file__).resolve().parents[1]
MODELS_COPY = REPO / "models" / "sacramento_2bed.toml"

MINIMAL = '[data]\npath = "points.csv"\nresponse = "log_price"\n'


def write_spec(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def spec_with(tmp_path: Path, section: str, line: str) -> Path:
    """MINIMAL plus one ``line`` in ``[section]`` (the data section already exists)."""
    if section == "data":
        return write_spec(tmp_path, MINIMAL + line + "\n")
    return write_spec(tmp_path, f"{MINIMAL}\n[{section}]\n{line}\n")


@pytest.fixture(scope="module")
def bundled() -> ReleaseSpec:
    return load_spec(bundled_spec_path())


# --- the bundled example ----------------------------------------------------------------------


def test_bundled_spec_and_models_copy_are_byte_identical():
    assert bundled_spec_path().is_file()
    assert MODELS_COPY.is_file()
    assert bundled_spec_path().read_bytes() == MODELS_COPY.read_bytes()


def test_bundled_spec_values(bundled):
    d = bundled.data
    assert (d.x, d.y, d.crs, d.id) == ("lon", "lat", "EPSG:4326", "id")
    assert d.query == "beds == 2"
    assert d.response == "log_price"
    assert d.back_transform == "exp"
    assert d.covariates == ["sqft_living"]
    assert d.target_crs == "utm"
    assert d.drop_duplicates is False
    m = bundled.model
    assert (m.gp, m.rho0, m.k, m.gamma, m.M_m) == ("exact", 0.2, 2, "inf", None)
    assert m.gamma_value == math.inf
    s = bundled.sampling
    assert (s.sampler, s.backend, s.chains, s.draws, s.tune, s.seed) == (
        "grid", "numba", 2, 1000, 1000, 20181)
    assert s.on_convergence_failure == "stop"
    assert bundled.synthesis.n_implicates == 100
    assert bundled.risk.eps == [10000.0]
    assert bundled.risk.p == [0.1]
    assert bundled.utility.formula == "log_price ~ sqft_living"
    assert bundled.formula == "log_price ~ sqft_living"
    assert bundled.utility.alpha == 0.05
    assert bundled.source == bundled_spec_path().resolve()


def test_bundled_spec_data_resolves_into_the_package(bundled):
    path = bundled.data_path()
    assert path.name == "sacramento_home_sales.csv"
    assert path.parent == bundled_spec_path().parent  # synthgeo/data/
    assert path.is_file()


def test_models_copy_resolves_synthgeo_prefix_into_the_package():
    spec = load_spec(MODELS_COPY)
    assert spec.data_path() == load_spec(bundled_spec_path()).data_path()
    assert spec.data_path().is_file()


def test_bundled_spec_prepares_140_records(bundled):
    from synthgeo.pipeline import prepare_data

    with pytest.warns(UserWarning, match="1 exact duplicate row"):
        data = prepare_data(bundled)
    assert data.n_records == 140
    assert data.sites.n_sites == 136
    assert data.y.shape == (140,)
    assert data.X.shape == (140, 2)
    np.testing.assert_array_equal(data.X[:, 0], 1.0)
    assert data.coef_names == ["Intercept", "sqft_living"]
    assert data.id_column == "id"
    assert len(np.unique(data.record_id)) == 140
    assert data.gdf.crs.to_epsg() == 32610  # UTM zone 10N, metres


# --- defaults and the release record ----------------------------------------------------------


def _field_defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_to_dict_contains_every_default(tmp_path):
    spec = load_spec(write_spec(tmp_path, MINIMAL))
    rec = spec.to_dict()
    assert set(rec) == {"data", "model", "sampling", "synthesis", "risk", "utility", "anonymity",
                        "compute", "source"}
    sections = {"data": DataConfig, "model": ModelConfig, "sampling": SamplingConfig,
                "synthesis": SynthesisConfig, "risk": RiskConfig, "utility": UtilityConfig,
                "anonymity": AnonymityConfig, "compute": ComputeConfig}
    for name, cls in sections.items():
        assert set(rec[name]) == {f.name for f in dataclasses.fields(cls)}, name
        for key, default in _field_defaults(cls).items():
            if (name, key) in (("data", "path"), ("data", "response"), ("risk", "loo_unit"),
                               ("risk", "loo_posterior")):
                continue  # given by MINIMAL or resolved (path None only for data in memory; response None
                #           only with [[data.responses]])
            assert rec[name][key] == default, (name, key)
    assert rec["data"]["path"] == "points.csv"
    assert rec["data"]["response"] == "log_price"
    assert rec["source"] == str((tmp_path / "spec.toml").resolve())
    # spot-check the documented defaults themselves
    assert rec["model"]["rho0"] == 0.2 and rec["model"]["gamma"] == "inf"
    assert rec["sampling"]["seed"] is None and rec["sampling"]["target_accept"] == 0.9
    assert rec["synthesis"]["n_implicates"] == 100
    assert rec["risk"] == {"eps": [10000.0], "p": [0.1], "targets": [], "on_risk_failure": "stop",
                           "loo_unit": "site",  # the default as run: no [data] subject
                           "loo_posterior": "reweighted",
                           "confidence": 0.95, "protect": "none", "max_rounds": 4,
                           "release_attacker": "judge", "input_noise_reading": "expected"}
    assert rec["utility"] == {"formula": None, "alpha": 0.05, "pmse_terms": "main",
                              "pmse_coordinates": "spline", "pmse_spline_df": 4,
                              "pmse_permutations": 20, "pmse_null_max_pairs": 5000}
    json.dumps(rec, allow_nan=False)  # JSON-serialisable as is


def test_default_formula_is_response_on_covariates(tmp_path):
    spec = load_spec(write_spec(tmp_path, MINIMAL + 'covariates = ["a", "b"]\n'))
    assert spec.formula == "log_price ~ a + b"
    assert load_spec(write_spec(tmp_path, MINIMAL)).formula == "log_price ~ 1"


def test_spec_is_frozen(bundled):
    with pytest.raises(dataclasses.FrozenInstanceError):
        bundled.model.rho0 = 0.5  # type: ignore[misc]


def test_replace_validates_again(bundled):
    assert bundled.replace("synthesis", n_implicates=5).synthesis.n_implicates == 5
    with pytest.raises(SpecError, match=r"n_implicates.*>= 2.*got 1"):
        bundled.replace("synthesis", n_implicates=1)
    with pytest.raises(SpecError, match=r"unknown key.*\[sampling\].*'draw'"):
        bundled.replace("sampling", draw=10)


# --- paths ------------------------------------------------------------------------------------


def test_relative_path_resolves_against_the_spec_folder(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    folder.mkdir()
    spec = load_spec(write_spec(folder, '[data]\npath = "../data/points.csv"\nresponse = "y"\n'))
    monkeypatch.chdir(folder)  # the working directory must not matter
    assert spec.data_path() == tmp_path / "data" / "points.csv"


def test_absolute_path_is_kept(tmp_path):
    target = tmp_path / "elsewhere" / "p.csv"
    text = f'[data]\npath = "{target.as_posix()}"\nresponse = "y"\n'
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.data_path() == target


def test_synthgeo_prefix_resolves_into_the_package(tmp_path):
    spec = load_spec(write_spec(
        tmp_path, '[data]\npath = "synthgeo:sacramento_home_sales.csv"\nresponse = "y"\n'))
    assert spec.data_path() == bundled_spec_path().parent / "sacramento_home_sales.csv"
    assert spec.data_path().is_file()


# --- refusals: file, sections, keys -----------------------------------------------------------


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match=r"spec file .*nope\.toml.* does not exist"):
        load_spec(tmp_path / "nope.toml")


def test_spec_path_is_a_folder(tmp_path):
    with pytest.raises(SpecError, match="is a folder"):
        load_spec(tmp_path)


def test_spec_not_valid_toml(tmp_path):
    with pytest.raises(SpecError, match=r"bad\.toml.* is not valid TOML"):
        load_spec(write_spec(tmp_path, "[data\npath = 'x'\n", "bad.toml"))


def test_spec_with_byte_order_mark_or_not_utf8(tmp_path):
    """Notepad's UTF-8 BOM is read; a Latin-1 file is named as such, not as bad TOML."""
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_spec(bom).data.response == "log_price"
    latin = tmp_path / "latin.toml"
    latin.write_bytes(("# pr\u00e9cis\n" + MINIMAL).encode("latin-1"))
    with pytest.raises(SpecError, match=r"latin\.toml' is not UTF-8 text \(byte 0xe9 at position "
                                        r"4\): save it as UTF-8"):
        load_spec(latin)


def test_unknown_section(tmp_path):
    with pytest.raises(SpecError, match=r"unknown spec section.*'modell'"):
        load_spec(write_spec(tmp_path, MINIMAL + "\n[modell]\nk = 2\n"))


def test_no_data_section(tmp_path):
    with pytest.raises(SpecError, match=r"no `\[data\]` section"):
        load_spec(write_spec(tmp_path, "[model]\nk = 2\n"))


def test_section_not_a_table(tmp_path):
    with pytest.raises(SpecError, match=r"`\[model\]` must be a table"):
        load_spec(write_spec(tmp_path, "model = 3\n" + MINIMAL))


@pytest.mark.parametrize(("section", "line", "key"), [
    ("data", 'respones = "y"', "respones"),
    ("model", "rho = 0.2", "rho"),
    ("sampling", "draw = 100", "draw"),
    ("synthesis", "L = 5", "L"),
    ("risk", "epsilon = [1.0]", "epsilon"),
    ("utility", 'formulas = "y ~ x"', "formulas"),
])
def test_unknown_key(tmp_path, section, line, key):
    with pytest.raises(SpecError, match=rf"unknown key\(s\) in `\[{section}\]`: \['{key}'\]"):
        load_spec(spec_with(tmp_path, section, line))


@pytest.mark.parametrize(("text", "key"), [
    ('[data]\npath = "points.csv"\n', "response"),
    ('[data]\nresponse = "y"\n', "path"),
])
def test_missing_required_key(tmp_path, text, key):
    with pytest.raises(SpecError, match=rf"`\[data\]` is missing required key\(s\) \['{key}'\]"):
        load_spec(write_spec(tmp_path, text))


# --- refusals: impossible values --------------------------------------------------------------

BAD_VALUES = [
    # (section, TOML line, regex the message must match: names the key and the valid values)
    ("model", "rho0 = 1.5", r"`\[model\] rho0` must be .*between 0 and 1.*got 1\.5"),
    ("model", "rho0 = 0", r"`\[model\] rho0`.*got 0"),
    ("model", "gamma = -1", r"`\[model\] gamma` must be a number >= 0, \"inf\" or \"auto\", got -1"),
    ("model", 'gamma = "big"', r"`\[model\] gamma`.*got 'big'"),
    ("model", "gamma = nan", r"`\[model\] gamma`.*got nan"),
    ("model", "gamma = true", r"`\[model\] gamma`.*got True"),
    ("model", "k = 1", r"`\[model\] k` must be an integer >= 2, got 1"),
    ("model", "k = 2.5", r"`\[model\] k`.*got 2\.5"),
    ("model", "M_m = -100.0", r"`\[model\] M_m` must be a positive.*metres, got -100\.0"),
    ("model", "M_m = inf", r"`\[model\] M_m`.*got inf"),
    ("model", 'gp = "hsgp"', r"`\[model\] gp` must be one of \"exact\", \"nngp\", \"auto\".*got 'hsgp'"),
    ("model", 'gp = "nngp"\n\n[sampling]\nsampler = "nutpie"',
     r'`\[model\] gp = "nngp"` needs `\[sampling\] sampler = "grid"`'),
    ("model", "n_neighbors = 1", r"`\[model\] n_neighbors` must be an integer from 2 to 50"),
    ("model", 'parametrization = "fancy"', r"`\[model\] parametrization`.*got 'fancy'"),
    ("model", 'at_risk_effect = "mean"', r"`\[model\] at_risk_effect`.*got 'mean'"),
    ("model", "priors = 5", r"`\[model\] priors` must be a table.*got 5"),
    ("model", "priors = { beta_sdd = 1.0 }", r"unknown key `\[model\.priors\] beta_sdd`"),
    ("model", "priors = { beta_sd = -1.0 }",
     r"`\[model\.priors\] beta_sd` must be a positive number, got -1\.0"),
    ("model", "priors = { nugget_sd_scale = 0 }", r"`\[model\.priors\] nugget_sd_scale`.*got 0"),
    ("model", "priors = { nugget_scale = 1.0 }", r"unknown key `\[model\.priors\] nugget_scale`"),
    ("model", 'priors = { beta_mean = "zero" }', r"`\[model\.priors\] beta_mean`.*got 'zero'"),
    ("model", "priors = { range_min_m = 500.0, range_max_m = 100.0 }",
     r"`\[model\.priors\] range_min_m` must be smaller than `range_max_m`"),
    ("sampling", "chains = 0", r"`\[sampling\] chains` must be an integer >= 1, got 0"),
    ("sampling", 'draws = "many"', r"`\[sampling\] draws` must be an integer >= 10, got 'many'"),
    ("sampling", "draws = 5", r"`\[sampling\] draws`.*>= 10, got 5"),
    ("sampling", "tune = 1e3", r"`\[sampling\] tune`.*got 1000\.0"),
    ("sampling", "chains = true", r"`\[sampling\] chains`.*got True"),
    ("sampling", 'sampler = "nutpie"\nchains = 1',
     r"`\[sampling\] chains` must be >= 2 when `on_convergence_failure` = \"stop\".*got 1"),
    ("sampling", "seed = -1",
     r"`\[sampling\] seed` must be a non-negative integer \(or left out: a fresh random "
     r"seed\), got -1"),
    ("sampling", 'sampler = "pymc"', r"`\[sampling\] sampler`.*got 'pymc'"),
    ("sampling", 'backend = "c"', r"`\[sampling\] backend`.*got 'c'"),
    ("sampling", "target_accept = 1.0", r"`\[sampling\] target_accept`.*\[0\.5, 1\).*got 1\.0"),
    ("sampling", 'on_convergence_failure = "ignore"',
     r"`\[sampling\] on_convergence_failure` must be \"stop\" or \"warn\", got 'ignore'"),
    ("synthesis", "n_implicates = 1", r"`\[synthesis\] n_implicates` must be an integer >= 2"),
    ("synthesis", "n_implicates = 10.0", r"`\[synthesis\] n_implicates`.*got 10\.0"),
    ("risk", "eps = [-5]", r"`\[risk\] eps` must be a non-empty list of positive.*got \[-5\]"),
    ("risk", "eps = 5000.0", r"`\[risk\] eps`.*got 5000\.0"),
    ("risk", "eps = [inf]", r"`\[risk\] eps`.*got \[inf\]"),
    ("risk", "p = []", r"`\[risk\] p` must be a non-empty list.*got \[\]"),
    ("risk", 'p = ["10%"]', r"`\[risk\] p`.*got \['10%'\]"),
    ("utility", "alpha = 2.0", r"`\[utility\] alpha` must be a number in \(0, 1\), got 2\.0"),
    ("utility", "alpha = 0", r"`\[utility\] alpha`.*got 0"),
    ("utility", 'formula = "log_price"', r"`\[utility\] formula` must be a patsy formula"),
    ("data", 'back_transform = "log10"',
     r"`\[data\] back_transform` must be one of \"exp\", \"identity\", got 'log10'"),
    ("data", 'covariates = "sqft_living"', r"`\[data\] covariates` must be a list"),
    ("data", 'covariates = ["log_price"]',
     r"`\[data\] covariates` must be columns other than the response 'log_price'"),
    ("data", 'covariates = ["a", "a"]', r"`\[data\] covariates`.*without repeated names"),
    ("data", 'x = "lon"', r"`\[data\] y` must be given together with the other coordinate"),
    ("data", "x = 1\ny = 2", r"`\[data\] x` must be a non-empty string.*got 1"),
    ("data", 'drop_duplicates = "no"', r"`\[data\] drop_duplicates` must be true or false"),
    ("data", "crs = 4326.5", r"`\[data\] crs` must be a CRS"),
]


@pytest.mark.parametrize(("section", "line", "match"), BAD_VALUES,
                         ids=[f"{s}:{line}" for s, line, _ in BAD_VALUES])
def test_impossible_value(tmp_path, section, line, match):
    with pytest.raises(SpecError, match=match):
        load_spec(spec_with(tmp_path, section, line))


def test_bad_path_and_response_types(tmp_path):
    with pytest.raises(SpecError, match=r"`\[data\] path` must be a non-empty string, got 5"):
        load_spec(write_spec(tmp_path, '[data]\npath = 5\nresponse = "y"\n'))
    with pytest.raises(SpecError, match=r"`\[data\] response` must be .*string, got \['y'\]"):
        load_spec(write_spec(tmp_path, '[data]\npath = "p.csv"\nresponse = ["y"]\n'))


@pytest.mark.parametrize(("section", "line"), [
    ("model", "gamma = 0"), ("model", "gamma = 2.5"), ("model", "gamma = inf"),
    ("model", "M_m = 250"), ("model", "priors = { beta_mean = -3.0, beta_sd = 10 }"),
    ("sampling", 'chains = 1\non_convergence_failure = "warn"'),
    ("sampling", "chains = 1"),  # the grid (the default sampler) has no R-hat to compare chains
    ("sampling", "target_accept = 0.95"),
    ("synthesis", "n_implicates = 2"), ("risk", "p = [0.05, 0.1]"),
    ("data", 'x = "lon"\ny = "lat"\ncrs = 4326'), ("data", 'target_crs = "EPSG:32610"'),
])
def test_edge_values_are_accepted(tmp_path, section, line):
    load_spec(spec_with(tmp_path, section, line))


# --- priors are checked again when the model is built -----------------------------------------


def test_spec_prior_keys_are_the_gp_prior_fields():
    from synthgeo.config import _PRIOR_KEYS
    from synthgeo.model.restricted_gp import GPPriors

    assert set(_PRIOR_KEYS) == {f.name for f in dataclasses.fields(GPPriors)}


def test_gp_priors_refuse_non_positive_values():
    from synthgeo.model.restricted_gp import GPPriors

    ok = dict(sigma2_scale=1.0, nugget_sd_scale=1.0, range_min_m=10.0, range_max_m=1000.0)
    GPPriors(**ok)
    with pytest.raises(SpecError, match=r"prior `beta_sd` must be a positive number, got -1"):
        GPPriors(**ok, beta_sd=-1.0)
    with pytest.raises(SpecError, match=r"prior `nugget_sd_scale` must be a positive number"):
        GPPriors(**{**ok, "nugget_sd_scale": 0.0})
    with pytest.raises(SpecError, match=r"prior `sigma2_shape` must be a positive number, got nan"):
        GPPriors(**ok, sigma2_shape=float("nan"))
    with pytest.raises(SpecError, match=r"0 < `range_min_m` < `range_max_m`, got 1000\.0, 10\.0"):
        GPPriors(**{**ok, "range_min_m": 1000.0, "range_max_m": 10.0})


def test_compute_scheduler_is_a_scheduler_address(tmp_path):
    text = MINIMAL + '\n[compute]\nscheduler = "tcp://10.0.0.5:8786"\n'
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.compute.scheduler == "tcp://10.0.0.5:8786"
    assert load_spec(write_spec(tmp_path, MINIMAL)).compute.scheduler is None
    for bad in ("10.0.0.5:8786", "http://host:8786", "tcp://", 8786):
        with pytest.raises(SpecError, match=r"`\[compute\] scheduler` must be the address of a "
                                            r"dask.distributed scheduler"):
            ComputeConfig(scheduler=bad)


def test_relative_tolerance_of_one_or_more_is_refused():
    """Break-it: `p = [1.5]` passed; within 150 % of the truth includes 0 and measures nothing."""
    from synthgeo._errors import SpecError
    from synthgeo.config import RiskConfig

    with pytest.raises(SpecError, match=r"\[risk\] p.*below 1"):
        RiskConfig(p=[1.5])
    assert RiskConfig(p=[0.5]).p == [0.5]


# --- more implicates than retained posterior draws: refused by the spec (break-it) -----------


def test_more_implicates_than_posterior_draws_is_refused_by_the_spec(bundled, tmp_path,
                                                                    capsys):
    """Break-it: validate said OK to n_implicates = 5000 beside 2 x 1000 draws; run refused."""
    from synthgeo.cli.main import main

    with pytest.raises(SpecError, match=r"`\[synthesis\] n_implicates` = 2001 needs as many "
                                        r"posterior draws .* = 2 × 1000 = 2000 are retained; "
                                        r"raise `draws` to at least 1001 or lower n_implicates "
                                        r"to at most 2000"):
        bundled.replace("synthesis", n_implicates=2001)
    assert bundled.replace("synthesis", n_implicates=2000).synthesis.n_implicates == 2000
    text = bundled_spec_path().read_text(encoding="utf-8").replace(
        "n_implicates = 100", "n_implicates = 5000")  # its data path is synthgeo:...
    spec = tmp_path / "s.toml"
    spec.write_text(text, encoding="utf-8")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "n_implicates` = 5000 needs as many" in err


def test_command_line_overrides_are_checked_together(capsys):
    """`--draws 20 --implicates 10` is valid though `--draws 20` beside the spec's L is not."""
    import argparse

    from synthgeo.cli._spec import OVERRIDES, spec_from_args

    def args(**given):
        ns = argparse.Namespace(spec=None, **{o: None for opts in OVERRIDES.values()
                                              for o, _ in opts})
        return argparse.Namespace(**{**vars(ns), **given})

    spec = spec_from_args(args(draws=20, implicates=10))
    assert (spec.sampling.draws, spec.synthesis.n_implicates) == (20, 10)
    with pytest.raises(SpecError, match=r"^`--draws 20` is invalid: `\[synthesis\] "
                                        r"n_implicates` = 100 needs as many"):
        spec_from_args(args(draws=20))
    with pytest.raises(SpecError, match=r"^`--chains 0` is invalid"):
        spec_from_args(args(chains=0, implicates=10))


def test_risk_rule_needs_twice_the_implicates_in_posterior_draws(bundled):
    """at_risk = "risk" | "both" selects on L draws and judges on L others: 2L retained."""
    targets = [{"measure": "rel:0.1", "record_threshold": 0.05}]
    spec = bundled.replace("risk", targets=targets)
    for rule in ("risk", "both"):
        ok = spec.replace("synthesis", n_implicates=1000).replace("model", at_risk=rule)
        assert ok.model.at_risk == rule
        with pytest.raises(SpecError, match=rf'`\[model\] at_risk = "{rule}"` selects records '
                                            r"on 1001 posterior draws and judges the release on "
                                            r"1001 others .*2002 are needed .* 2000 are "
                                            r"retained; raise `draws` to at least 1001 or lower "
                                            r"n_implicates to at most 1000"):
            ok.replace("synthesis", n_implicates=1001)
    assert spec.replace("synthesis", n_implicates=1001).model.at_risk == "spatial"
