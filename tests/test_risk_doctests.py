"""The Examples sections of the risk library and the response scale run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "synthgeo.model.transform", "synthgeo.config.measure", "synthgeo.risk.predictive",
    "synthgeo.risk.rao_blackwell", "synthgeo.risk.loo", "synthgeo.risk.loo_units",
    "synthgeo.risk.baselines",
    "synthgeo.risk.records", "synthgeo.risk.attributable", "synthgeo.risk.verdict",
    "synthgeo.risk.joint", "synthgeo.risk.selection", "synthgeo.risk.neighbours",
    "synthgeo.risk.within_eps", "synthgeo.risk.detector", "synthgeo.risk.noise",
    "synthgeo.risk.fresh_draws", "synthgeo._seed", "synthgeo.inference.conditionals",
    "synthgeo.synthesis.implicates",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": importlib.import_module("numpy"),
                                                 "pd": importlib.import_module("pandas")},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"
    assert result.attempted > 0 or name == "synthgeo.risk.within_eps"
