"""``synthgeo mask``: donut-mask case points to k households, once, and write the layer."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from synthgeo._warn import warn
from synthgeo.cli._masking import (
    add_attacker_args,
    add_input_args,
    add_utility_args,
    input_files,
    load_inputs,
    make_utility,
)
from synthgeo.cli._options import MASKING, add, seed_value

_SMALL_SEED = 10**9


def add_parser(sub, common) -> None:
    """Register ``synthgeo mask``."""
    p = sub.add_parser(
        "mask", parents=[common], help="donut-mask case points to k households",
        description="Move each case in a random direction by a distance uniform in area "
                    "between 0.5 r_k and r_k metres, r_k the distance to its k-th nearest "
                    "household, redrawing moves that leave the study region. Writes "
                    "DIR/release/ (masked layer, CSV, method note: publishable) and "
                    "DIR/mask.json (seed, input hashes, evaluation: confidential). Mask once: "
                    "rerunning on the same inputs reuses the written mask; --reuse carries "
                    "earlier masked points into a later release.",
    )
    add_input_args(p)
    p.add_argument("--k", type=int, required=True, metavar="K",
                   help="households each case is hidden among (integer >= 2, at most the "
                        "household total); choose it with `synthgeo choose-k` (no default: "
                        "required)")
    p.add_argument("--seed", type=seed_value, metavar="INT",
                   help="random seed, non-negative integer (default: a fresh random 63-bit "
                        "seed, recorded in mask.json); it is the key of the mask: keep it "
                        "confidential and long")
    p.add_argument("--out", default="synthgeo-mask", metavar="DIR",
                   help="output folder (default: ./synthgeo-mask); must not exist, unless it "
                        "holds this same mask (then it is reused) or --overwrite")
    p.add_argument("--format", choices=["parquet", "gpkg"], default="parquet",
                   help="masked layer format: GeoParquet or GeoPackage (default: parquet); a "
                        "CSV with x_m/y_m in metres is always written too")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier mask in --out (only if it was never released: two "
                        "independent masks of the same cases can be averaged; default: refuse)")
    p.add_argument("--release-ids", choices=["pseudonymous", "original"],
                   default="pseudonymous",
                   help="what the published id column holds: pseudonymous, 1..n in a random row "
                        "order, the map to the case ids kept beside mask.json (confidential); "
                        "original: the case ids as given, only for ids that are already public "
                        "pseudonyms (a warning is recorded in mask.json); rows are published in "
                        "a random order either way (default: pseudonymous)")
    p.add_argument("--reuse", metavar="DIR",
                   help="earlier mask folder: cases whose id is in it keep their earlier masked "
                        "point; only new cases are masked (default: none)")
    add_utility_args(p, required=False)
    add_attacker_args(p)
    add(p, MASKING, ["verify", "max_verify_redraws", "max_site_records"])
    p.add_argument("--method", choices=["donut", "areal"], default="donut",
                   help="donut: move each case by 0.5 r_k..r_k; areal: publish it uniformly "
                        "within its area of a partition of the household layer into areas of "
                        ">= k households, which a method-aware attacker cannot narrow below "
                        "1/k (default: donut)")
    p.add_argument("--accept-attacker-success-one", action="store_true",
                   help="write the mask even when the attacker success on it (the stronger "
                        "attacker, method-aware included) reads 1.000: every attacked case "
                        "linked to its true location; recorded in mask.json (default: "
                        "refuse, nothing written)")
    p.add_argument("--n-attacks", type=int, default=200, metavar="N",
                   help="random choices of the attacker's known cases averaged over when "
                        "scoring the written mask (default: 200)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import numpy as np

    from synthgeo._errors import SpecError
    from synthgeo.io.provenance import provenance
    from synthgeo.masking import (
        NearestHouseholdAttacker,
        evaluate_mask,
        mask_to_k,
        read_mask,
        reuse_previous_mask,
        write_mask,
    )
    from synthgeo.masking._validate import resolve_seed
    from synthgeo.masking.sites import shared_locations
    from synthgeo.masking.store import (
        MASK_ID_MAP,
        MASK_SIDECAR,
        ORIGINAL_IDS_WARNING,
        check_output_dir,
        inputs_key,
    )

    attacker = NearestHouseholdAttacker(known_share=args.known_share)
    inputs = load_inputs(args)
    prov = inputs.provenance
    previous = None
    if args.reuse is not None:
        previous = read_mask(args.reuse)
        was = (previous[1].get("method", "donut"), previous[1].get("k"))
        if was != (args.method, args.k):
            raise SpecError(f"--reuse {args.reuse} holds a mask by method {was[0]} at k = "
                            f"{was[1]} but this one is by {args.method} at k = {args.k}: its "
                            "carried-over points "
                            "would be published under the wrong method and k; use --method "
                            f"{was[0]} --k {was[1]}, or mask without --reuse")
    params = {
        "cases": {k: prov["cases"][k] for k in ("sha256", "query", "id_column")},
        "households": {k: prov["households"][k] for k in ("sha256", "query", "weight_column")},
        "region": None if prov["region"] is None else prov["region"]["sha256"],
        "coordinates": {k: prov["coordinates"][k] for k in ("x", "y", "crs", "coord_unit_m")},
        "k": args.k, "method": ("areal-1" if args.method == "areal" else
                                "donut-1" + ("-verified" if args.verify else "")),
        "max_site_records": args.max_site_records,
        "reuse": None if previous is None else previous[1].get("inputs_key"),
    }
    key = inputs_key(params)
    out = Path(args.out)
    if _same_mask_written(out, key, args, say):
        return 0
    check_output_dir(out, marker=MASK_SIDECAR, overwrite=args.overwrite,
                     inputs=input_files(args))
    if args.seed is not None and 0 <= args.seed < _SMALL_SEED:
        warn(f"--seed {args.seed} is short: the seed is the key of the mask and a "
                      "short one can be guessed and the displacements undone; omit --seed to "
                      "draw a long random one")
    if args.release_ids == "original":
        warn(ORIGINAL_IDS_WARNING)
    seed = resolve_seed(args.seed)
    mask = mask_to_k(inputs.cases, inputs.households, k=args.k, weights=inputs.weights,
                     region=inputs.region, random_seed=seed, verify=args.verify,
                     max_verify_redraws=args.max_verify_redraws, method=args.method,
                     max_site_records=args.max_site_records)
    reused = None
    if previous is not None:
        layer, side = previous
        mask = reuse_previous_mask(mask, layer, inputs.cases)
        reused = {"path": str(args.reuse), "inputs_key": side.get("inputs_key"),
                  "k": side.get("k"), "n_reused": mask.n_reused}
    utility = make_utility(args, inputs)
    evaluation = evaluate_mask(inputs.cases, mask, attacker=attacker, utility=utility,
                               n_attacks=args.n_attacks,
                               random_seed=np.random.default_rng([seed, 2]),
                               households=inputs.households, weights=inputs.weights,
                               region=inputs.region)
    accepted = _refuse_certain_attack(evaluation, accept=args.accept_attacker_success_one)
    record = {
        **provenance("mask", inputs=prov, timestamp=False), "inputs_key": key, "parameters": params,
        "reused_from": reused, "evaluation": evaluation.to_dict(),
        **({"accepted": accepted} if accepted else {}),
        "household_layer": shared_locations(np.column_stack(
            [inputs.households.geometry.x, inputs.households.geometry.y])),
    }
    written = write_mask(mask, out, record=record, file_format=args.format,
                         overwrite=args.overwrite, inputs=input_files(args),
                         release_ids=args.release_ids)
    side = json.loads((written / MASK_SIDECAR).read_text(encoding="utf-8"))
    _summary(say, side)
    print(f"masked points: {written / side['layer']}")
    print(f"record (confidential: holds the seed): {written / MASK_SIDECAR}")
    if (written / MASK_ID_MAP).is_file():
        print(f"id map (confidential: links the published ids to the cases): "
              f"{written / MASK_ID_MAP}")
    return 0


def _same_mask_written(out: Path, key: str, args: argparse.Namespace, say) -> bool:
    """Reuse the mask in `out` when it has the same inputs (True); refuse a different one."""
    from synthgeo._errors import SpecError
    from synthgeo.masking import read_mask
    from synthgeo.masking.store import MASK_SIDECAR

    side_path = out / MASK_SIDECAR
    if not side_path.is_file():
        return False
    old = json.loads(side_path.read_text(encoding="utf-8"))
    if old.get("inputs_key") == key and args.seed in (None, old.get("random_seed")):
        was = old.get("release_ids", "original")  # masks written before 2026-12-07: case ids
        if was != args.release_ids:
            raise SpecError(
                f"{out} holds this mask published with --release-ids {was}, not "
                f"{args.release_ids}; pass --release-ids {was} to reuse it as it stands, or "
                f"mask into another `--out` with `--reuse {out}` to publish its points again")
        _, side = read_mask(out)  # checks the files are unchanged
        say(f"reusing the mask in {out} (same inputs and k, seed from its mask.json); "
            "nothing re-masked or rewritten")
        _summary(say, side)
        print(f"masked points: {out / side['layer']}")
        return True
    if not args.overwrite:
        raise SpecError(
            f"{out} holds a mask made from other inputs, k or seed; a second independent "
            "mask of the same cases lets an attacker average the two. Use another `--out`, "
            "`--reuse` it to keep the masked points already released, or `--overwrite` only "
            "if that mask was never released")
    return False


#: choose-k's default target on attacker success (``--max-attacker-success``).
DEFAULT_MAX_SUCCESS = 0.05
#: An attacker success that prints as 1.000 (three decimals) is refused without
#: ``--accept-attacker-success-one`` (break-it trial 2026-12-07: three cases masked at k = 5
#: were written with 1.000 under warnings only).
CERTAIN_SUCCESS = 0.9995


def _refuse_certain_attack(evaluation, *, accept: bool) -> dict | None:
    """Refuse a mask whose stronger attacker links every attacked case; the accept record.

    The stronger of the naive and the method-aware (Kerckhoffs) attackers, as mask.json's
    ``evaluation.attacker_success`` records it (:func:`synthgeo.masking.evaluate_mask`).

    Raises
    ------
    SpecError
        When that success reads 1.000 and `accept` is False; nothing is written.
    """
    from synthgeo._errors import SpecError

    success = float(evaluation.attacker_success)
    if not success >= CERTAIN_SUCCESS:
        return None
    both = evaluation.attackers or {}
    who = (f"the {both['stronger'].replace('_', ' ')} attacker, method-aware attackers "
           "included," if both else "the attacker")
    n_known = (evaluation.attacker or {}).get("n_known")
    knows = f" knowing {n_known} case(s)" if n_known is not None else ""
    if not accept:
        # with one known case, even a random guess among the known cases is right: a larger
        # k cannot help (second break-it trial), only more cases can
        floor = 1.0 if n_known is not None and int(n_known) <= 1 else None
        advice = ("the attacker knows only one case, so even a random guess links it (the "
                  "guessing floor is 1.000 whatever k): mask more cases together"
                  if floor else
                  "mask more cases together or at a larger k (see `synthgeo choose-k`)")
        raise SpecError(
            f"attacker success on this mask reads {success:.3f} ({who}{knows}): every attacked "
            f"case is linked to its true location, so the mask protects none; nothing was "
            f"written. {advice[0].upper() + advice[1:]}, or pass "
            "--accept-attacker-success-one to write it anyway (recorded in mask.json)")
    return {"attacker_success_one": {
        "option": "--accept-attacker-success-one", "attacker_success": success,
        "note": "written although the attacker success on this mask reads 1.000: every "
                "attacked case linked to its true location"}}


def _summary(say, side: dict) -> None:
    ev = side.get("evaluation") or {}
    att = ev.get("attacker") or {}
    say(f"{side['n_cases']} cases masked to k = {side['k']} households ({side['n_redraws']} "
        f"redraws outside the region, {side.get('n_reused', 0)} carried over from an earlier "
        f"mask); CRS {side['crs']}")
    if side.get("largest_site", 1) > 1:
        say(f"co-located records: up to {side['largest_site']} at one location, published at "
            "one shared point per location")
    if ev:
        say(f"displacement: median {ev['median_displacement_m']:.0f} m (min "
            f"{ev['min_displacement_m']:.0f}, max {ev['max_displacement_m']:.0f})")
        both = ev.get("attackers")
        if both:
            say(f"attacker success on this mask: naive {both['naive']['success']:.3f}, "
                f"method-aware {both['aware_known_cases']['success']:.3f} (both know "
                f"{att.get('n_known')} cases), method-aware over all households "
                f"{both['aware_households']['success']:.3f}; the stronger "
                f"{ev['attacker_success']:.3f}, random-guess floor max(1/k, 1/n_known) = "
                f"{both['floor']:.3f}")
        else:
            say(f"attacker success on this mask: {ev['attacker_success']:.3f} (± "
                f"{ev['attacker_success_se']:.3f} MC s.e.; attacker knows {att.get('n_known')} "
                f"cases; random-guess baseline {att.get('baseline', float('nan')):.3f})")
        if max(ev["attacker_success"], (both or {}).get("floor", 0.0)) > DEFAULT_MAX_SUCCESS:
            say(f"warning: attacker success {ev['attacker_success']:.3f} is above "
                f"{DEFAULT_MAX_SUCCESS:g} (choose-k's default target): whatever k says, this "
                "mask does not protect these cases against that attacker (too few households "
                "around them, or k too small); see `synthgeo choose-k`")
        vk = ev.get("verified_k")
        if vk:
            what = ("households in the case's area" if side.get("method") == "areal" else
                    "households at least as close to the masked point as the true location")
            say(f"verified k ({what}): median {vk['median']:.0f}, min {vk['min']:.0f}, "
                f"{vk['n_below_k']} of {vk['n']} cases below k = {vk['k']}"
                + ("" if vk["n_below_k"] else " (verified mask)" if side.get("verification")
                   else ""))
        ver = side.get("verification")
        if ver and ver.get("method") == "areal":
            say(f"areal mask: {ver['n_areas']} areas, at least "
                f"{ver['min_households_in_area']:g} households each (inside the region), at "
                f"least {ver.get('min_locations_in_area', '?')} distinct household locations")
        elif ver:
            say(f"verified mask: {ver['n_redraws']} redraws in {ver['rounds']} rounds (bound "
                f"{ver['max_redraws']}), {ver['n_widened']} annuli widened (up to "
                f"x{ver['max_annulus_scale']:.2f})")
        hl = side.get("household_layer")
        if hl and hl["points_sharing_a_location"]:
            say(f"household layer: {hl['points_sharing_a_location']} of {hl['points']} points "
                f"share their coordinates with another ({hl['distinct_locations']} distinct "
                "locations); k counts them as separate households, an attacker can at best "
                "name the location: check for duplicated rows")
        u = ev.get("utility")
        if u:
            obs = (f": observed {u['observed']} within {u['radius_m']:.0f} m vs "
                   f"{u['expected']:.2f} expected (true locations: "
                   f"{u['observed_on_true_locations']})" if "observed" in u else "")
            say(f"utility test ({u['name']}) on this mask: "
                f"{'passes' if u['passes'] else 'fails'}{obs}")
    if side.get("composition"):
        say(f"warning: {side['composition']}")
    if (side.get("accepted") or {}).get("attacker_success_one"):
        say("warning: written under --accept-attacker-success-one: attacker success 1.000, "
            "every attacked case linked to its true location (recorded in mask.json)")
