"""Rare-disease point releases: donut geomasking to k and choosing k from evidence.

docs/locations.md, "Donut geomasking and choosing k". :func:`mask_to_k` masks a case layer;
:func:`choose_k` sweeps k over replicate masks, scoring an attacker model
(:class:`NearestHouseholdAttacker`) and a utility test (:class:`ExcessNearSource`, or your own),
and picks the smallest k meeting both targets; :func:`plot_choose_k` draws the two curves;
:func:`write_mask`/:func:`read_mask` store a mask once for reuse.
"""

from synthgeo.masking.attacker import Attacker, NearestHouseholdAttacker
from synthgeo.masking.detection import ExcessNearSource, FunctionUtility, UtilityTest
from synthgeo.masking.donut import INNER_RATIO, DonutMask, kth_household_distance, mask_to_k
from synthgeo.masking.evaluate import MaskEvaluation, evaluate_mask
from synthgeo.masking.plot import plot_choose_k
from synthgeo.masking.store import read_mask, reuse_previous_mask, write_choose_k, write_mask
from synthgeo.masking.sweep import (
    ALTERNATIVES,
    DEFAULT_K_GRID,
    ChooseKResult,
    choose_k,
    smallest_k_meeting,
)

__all__ = [
    "ALTERNATIVES", "DEFAULT_K_GRID", "INNER_RATIO",
    "Attacker", "NearestHouseholdAttacker",
    "UtilityTest", "ExcessNearSource", "FunctionUtility",
    "DonutMask", "kth_household_distance", "mask_to_k",
    "ChooseKResult", "choose_k", "smallest_k_meeting", "plot_choose_k",
    "MaskEvaluation", "evaluate_mask",
    "write_mask", "read_mask", "reuse_previous_mask", "write_choose_k",
]
