"""Rare-disease point releases: donut and areal masking to k, choosing method and k from evidence.

docs/locations.md, "Donut geomasking and choosing k". :func:`mask_to_k` masks a case layer
(donut, or areal: uniform within an area of >= k households); :func:`choose_k` sweeps methods
and k over replicate masks, scoring the naive and the method-aware attacker
(:class:`NearestHouseholdAttacker`, :class:`MethodAwareAttacker`) and a utility test
(:class:`ExcessNearSource`, or your own), and picks the method and smallest k meeting both
targets against the stronger attacker; :func:`plot_choose_k` draws the two curves;
:func:`write_mask`/:func:`read_mask` store a mask once for reuse, published under release
pseudonyms in a random row order (:func:`released_layer`).
"""

from synthgeo.masking.areal import AreaPartition, household_partition
from synthgeo.masking.attacker import Attacker, NearestHouseholdAttacker
from synthgeo.masking.bayes import MethodAwareAttacker, mask_law
from synthgeo.masking.detection import ExcessNearSource, FunctionUtility, UtilityTest
from synthgeo.masking.donut import INNER_RATIO, DonutMask, kth_household_distance, mask_to_k
from synthgeo.masking.evaluate import MaskEvaluation, evaluate_mask
from synthgeo.masking.plot import plot_choose_k
from synthgeo.masking.sites import DEFAULT_MAX_SITE_RECORDS
from synthgeo.masking.store import (
    read_mask,
    released_layer,
    reuse_previous_mask,
    write_choose_k,
    write_mask,
)
from synthgeo.masking.sweep import (
    ALTERNATIVES,
    DEFAULT_K_GRID,
    METHODS,
    ChooseKResult,
    choose_k,
    smallest_k_meeting,
)

__all__ = [
    "ALTERNATIVES", "DEFAULT_K_GRID", "INNER_RATIO", "METHODS", "DEFAULT_MAX_SITE_RECORDS",
    "Attacker", "NearestHouseholdAttacker", "MethodAwareAttacker", "mask_law",
    "AreaPartition", "household_partition",
    "UtilityTest", "ExcessNearSource", "FunctionUtility",
    "DonutMask", "kth_household_distance", "mask_to_k",
    "ChooseKResult", "choose_k", "smallest_k_meeting", "plot_choose_k",
    "MaskEvaluation", "evaluate_mask",
    "write_mask", "read_mask", "released_layer", "reuse_previous_mask", "write_choose_k",
]
