"""More implicates from a release's stored synthesiser, without refitting (``synthgeo draw``).

``synthgeo draw RELEASE_DIR --implicates N --register REG`` / ``sg.draw(...)``:

1. checks the folder against the register as ``--previous`` does (its release.json registered
   and, when signed, its HMAC valid; its ``release/`` files as registered), then the stored
   synthesiser ``confidential/synthesiser.nc`` against the SHA-256 its release.json records
   (``synthesiser.sha256``; under the HMAC when the release is signed);
2. takes N posterior draws **no implicate used before** (evenly spread over the unused ones;
   :func:`synthgeo.inference.stored.unused_draw_index`); when fewer than N are left it
   refuses, naming ``--refit``; with ``--refit`` (``refit=True``) it fits both models again
   from the stored state instead — the release's spec, its records checked against the
   stored SHA-256 before fitting, a new seed — and goes on as below with the new posterior
   (release.json ``synthesiser.drawn_from.refit``);
3. rebuilds both fits from the stored draws (a grid fit's spatial effects w drawn again from
   the records under the fit's own seed, :func:`synthgeo.inference.grid.grid_fit_from_draws`;
   the records must be the ones the release was fitted to), and runs the release pipeline on
   them with a fresh seed for the implicates' noise: at-risk set (the stored φ quantiles give
   the same M), synthesis from the new draws, risk, utility and the **cumulative risk over
   the earlier and the new implicates** with the board's targets applied to it
   (:mod:`synthgeo.pipeline.previous`);
4. the result is written as a new release folder, registered in the chain after the one it
   was drawn from; its stored synthesiser marks the draws both releases used.

The same seed gives the same implicates (the register refuses a seed used before, so a
repeat needs another register).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from synthgeo._errors import InputError, SpecError
from synthgeo.config import ReleaseSpec, spec_from_dict
from synthgeo.inference.stored import (
    SYNTHESISER_FILE,
    StoredPhiQuantiles,
    StoredSynthesiser,
    check_records,
    load_synthesiser,
    unused_draw_index,
)
from synthgeo.io.provenance import file_sha256
from synthgeo.pipeline.result import ReleaseResult, SynthesiserState

__all__ = ["draw_release", "check_draw_request", "stored_fitter", "land_checked"]


def _refuse(folder: Path, what: str) -> InputError:
    return InputError(f"draw {str(folder)!r}: {what}; nothing was written")


def check_draw_request(release_dir: str | os.PathLike, n_implicates) -> Path:
    """Check the folder exists and N is an integer ≥ 2; return the folder.

    Raises
    ------
    synthgeo.InputError
        No such folder, or no release.json in it.
    synthgeo.SpecError
        N not an integer ≥ 2.

    Examples
    --------
    >>> try:
    ...     check_draw_request("/nonexistent", 50)
    ... except Exception as exc:
    ...     print(str(exc)[:40])
    draw '/nonexistent': no release folder t
    """
    if isinstance(n_implicates, bool) or not isinstance(n_implicates, (int, np.integer)) \
            or n_implicates < 2:
        raise SpecError(f"--implicates must be an integer >= 2 (Reiter's between-implicate "
                        f"variance needs two), got {n_implicates!r}")
    folder = Path(release_dir)
    if not (folder / "release.json").is_file():
        raise _refuse(folder, "no release folder there (no release.json); give the folder "
                              "`synthgeo run` wrote")
    return folder


def stored_fitter(stored: StoredSynthesiser):
    """Return a :data:`~synthgeo.pipeline.run.Fitter` that rebuilds the stored fits.

    Called as the pipeline calls a fitter (``label`` "unrestricted" or "restricted", the
    restricted one with its D as ``scale``); it refits nothing. The records must be the ones
    the release was fitted to (their SHA-256 is checked).
    """
    from synthgeo.inference.grid import grid_fit_from_draws
    from synthgeo.inference.result import build_fit
    from synthgeo.model.smoothing import Smoothing

    def fit(y, X, sites, *, priors, coef_names, config, scale=None, random_seed=None,
            label="model"):
        del coef_names, config, random_seed  # the stored draws carry them; the fits' own seed
        if label == "unrestricted":
            check_records(y, X, stored.records_sha256)
        post = stored.model_posterior(label)
        engine = stored.engine[label]
        quantiles = StoredPhiQuantiles((0.05, 0.5, 0.95), stored.phi_quantiles[label])
        if "w" not in post and engine.get("sampler") == "grid":
            return grid_fit_from_draws(post, y, X, sites, scale=scale, priors=priors,
                                       engine=engine, random_seed=stored.fit_seed,
                                       grid=quantiles, label=label)
        if "w" not in post:
            raise InputError(f"draw: the stored {label} posterior holds no spatial effects and "
                             f"its engine ({engine.get('sampler')!r}) cannot draw them again")
        smoothing = scale if isinstance(scale, Smoothing) else None
        if smoothing is None:
            d = np.ones(sites.n_sites) if scale is None else np.asarray(scale, float)
        elif smoothing.depends_on_nugget:  # γ = "auto": D per draw (GPFit.scales); report
            d = smoothing.scale(float(np.median((post["nugget"] / post["sigma2"]).values)))
        else:
            d = smoothing.scale()
        return build_fit(post, y=y, sites=sites, scale=d, priors=priors, seconds={},
                         engine=dict(engine), smoothing=smoothing, grid=quantiles,
                         label=label)

    return fit


def _draw_spec(record: dict, folder: Path, n_implicates: int, seed: int | None) -> ReleaseSpec:
    """Return the new release's spec: the earlier one's, with N implicates and the new seed."""
    spec = spec_from_dict(record["spec"])
    if spec.data.sequential:
        raise SpecError(f"draw {str(folder)!r}: drawing more implicates is applied to one "
                        "gaussian response only, not [[data.responses]]")
    if spec.synthesis.predictive == "cross_fit":
        raise SpecError(f"draw {str(folder)!r}: the release's implicates are cross-fitted "
                        "(`[synthesis] predictive = \"cross_fit\"`), drawn from leave-out "
                        "predictives, not from a stored posterior; run `synthgeo run "
                        "--previous` for more")
    if spec.model.at_risk != "spatial":
        raise SpecError(f"draw {str(folder)!r}: `[model] at_risk = \"{spec.model.at_risk}\"` "
                        "selects records on fresh posterior draws of its own, which a draw "
                        "would have to repeat; run `synthgeo run --previous` for more")
    s = spec.sampling
    if int(n_implicates) > s.chains * s.draws:  # refit or not: one posterior draw each
        raise SpecError(f"draw {str(folder)!r}: {int(n_implicates)} implicates are more than "
                        f"the {s.chains} × {s.draws} = {s.chains * s.draws} posterior draws its "
                        "spec retains (one per implicate), refit or not; ask for fewer, or run "
                        "`synthgeo run --previous` with more `[sampling] draws`")
    spec = spec.replace("synthesis", n_implicates=int(n_implicates))
    return spec.replace("sampling", seed=seed)


def _signed_or_not(entry) -> str:
    """Return "signed" or "unsigned", as the register holds the release (for messages)."""
    return "signed" if entry.signed else "unsigned"


def draw_release(release_dir: str | os.PathLike, n_implicates: int, *,
                 seed: int | None = None, ledger=None, progress=None,
                 progressbar: bool = False, refit: bool = False) -> ReleaseResult:
    """Draw N more implicates from a release's stored synthesiser and score them (no writing).

    Parameters
    ----------
    release_dir : path
        A release folder ``synthgeo run`` (or ``synthgeo draw``) wrote, registered.
    n_implicates : int
        N ≥ 2 new implicates.
    seed : int, optional
        The new implicates' seed (default: a fresh 128-bit one); the fits' draws are the
        stored ones whatever it is.
    ledger : synthgeo.register.Ledger
        The register and key (:func:`synthgeo.register.make_ledger`); required.
    progress : callable, optional
        ``progress(message)`` at each stage.
    progressbar : bool, default=False
    refit : bool, default=False
        When fewer than N posterior draws are unused: fit both models again from the stored
        state instead of refusing — the release's own spec (N implicates, ``seed``), its
        records (read with its ``[data]`` keys and checked against the SHA-256 the stored
        synthesiser holds before anything is fitted), the fits' seed derived from ``seed``
        as in any run (a spawned stream of ``SeedSequence(seed)``, not the stored fits'
        seed): a new posterior, whose N implicates are scored and pooled with the earlier
        release's like a draw's; ``synthesiser.drawn_from.refit`` is true. With N unused
        draws left nothing is refitted (``refit`` false): the stored draws are used.

    Returns
    -------
    ReleaseResult
        With ``cumulative`` (the earlier and the new implicates pooled) and ``synthesiser``
        (the draws used now, and ``drawn_from`` with ``refit``);
        :func:`synthgeo.release.writer.write_result` writes it.

    Raises
    ------
    synthgeo.InputError
        No release folder; no register; a release.json the register does not hold or whose
        HMAC does not verify; release files changed; no stored synthesiser (a release written
        before synthgeo stored one) or one that does not match its release.json;
        fewer unused draws than N without ``refit`` (the message names ``--refit``); other
        records than the release's; a seed a registered release used.
    synthgeo.SpecError
        N not an integer ≥ 2; a release of several responses, cross-fitted, or with a risk-
        selected at-risk set.
    """
    from synthgeo.pipeline.run import run_release

    folder = check_draw_request(release_dir, n_implicates)
    if ledger is None or ledger.register is None:
        from synthgeo.register.store import REGISTER_ENV

        raise InputError(f"draw reads the release register, not the folder's own release.json:"
                         f" give --register PATH (or set {REGISTER_ENV}) where the release was "
                         "registered; nothing was written")
    entry, record = ledger.register.verify_folder(folder, ledger.key, flag="draw",
                                                  allow_unsigned=ledger.allow_unsigned)
    later = ledger.register.successor(entry.id)
    if later is not None:  # a second draw from one folder would reuse its unused draws
        raise _refuse(folder, f"the register already holds a release made after it (id "
                              f"{later.id}, folder {later.folder!r}): its stored synthesiser "
                              "does not know which posterior draws that release used, and a "
                              "fork would pool neither branch with the other; draw from the "
                              "newest release of the chain (`synthgeo releases` lists them)")
    spec = _draw_spec(record, folder, n_implicates, seed)  # what a draw cannot extend, first
    block = record.get("synthesiser")
    path = folder / "confidential" / SYNTHESISER_FILE
    if block is None or not path.is_file():
        raise _refuse(folder, f"it holds no stored synthesiser (confidential/{SYNTHESISER_FILE}"
                              "; releases written before synthgeo stored one, or the file "
                              "removed): run `synthgeo run --previous` to fit again")
    if file_sha256(path) != block["sha256"]:
        raise _refuse(folder, f"confidential/{SYNTHESISER_FILE} does not match the SHA-256 in "
                              f"its {_signed_or_not(entry)} release.json (changed after "
                              "release)")
    try:
        stored = load_synthesiser(path)
    except (KeyError, ValueError, OSError) as exc:
        raise _refuse(folder, f"confidential/{SYNTHESISER_FILE} is not a stored synthesiser "
                              f"this synthgeo reads ({type(exc).__name__}): run `synthgeo run "
                              "--previous` to fit again") from None
    drawn_from = {"release_json_sha256": entry.release_json_sha256, "register_id": entry.id,
                  "release_uid": entry.release_uid, "n_new_draws": int(n_implicates)}
    say = progress or (lambda _m: None)
    try:
        new = unused_draw_index(stored.used, int(n_implicates))
    except ValueError:
        if not refit:
            raise _refuse(folder, f"{stored.n_unused} of its {stored.n_draws} posterior draws "
                                  f"are unused, fewer than the {int(n_implicates)} asked for; "
                                  "give --refit (`refit=True`) to fit the posterior again from "
                                  "the stored state (the same spec and records, a new seed), "
                                  "or ask for fewer") from None
        say(f"refit: {stored.n_unused} of {stored.n_draws} posterior draws are unused, fewer "
            f"than the {int(n_implicates)} asked for; fitting both models again from the "
            "stored state (the release's spec and records, checked by SHA-256; a new seed)")
        result = run_release(spec, progress=progress, progressbar=progressbar,
                             previous=folder, ledger=ledger, land_checked=land_checked(record),
                             records_digest=stored.records_sha256)
        state = dataclasses.replace(result.synthesiser,
                                    drawn_from={**drawn_from, "refit": True})
        return dataclasses.replace(result, synthesiser=state)
    say(f"drawing {int(n_implicates)} implicates from {new.size} posterior draws no implicate "
        f"used before ({stored.n_unused} of {stored.n_draws} unused before this draw, "
        f"{stored.n_unused - new.size} after; no refit)")
    plan = SynthesiserState(
        fit_seed=stored.fit_seed, used_draws=np.flatnonzero(stored.used.ravel()),
        new_draws=new, drawn_from={**drawn_from, "n_new_draws": int(new.size), "refit": False},
        earlier_folder=folder)
    return run_release(spec, fitter=stored_fitter(stored), progress=progress,
                       progressbar=progressbar, previous=folder, ledger=ledger, plan=plan,
                       land_checked=land_checked(record), records_digest=stored.records_sha256)


def land_checked(record: dict):
    """Return the release's land/sea outcome for its input file (None: no file recorded).

    The release read ``input.sha256``'s bytes with the ``[data]`` keys of its signed spec, the
    ones the draw reads them with, and passed the land/sea test (else nothing would have been
    written), giving the ``offshore`` warnings its release.json keeps; the draw reads the
    file again and, when its bytes are those, gives those warnings again instead of loading
    the land mask (:class:`synthgeo.io.where.LandChecked`).

    Examples
    --------
    >>> land_checked({"input": {"sha256": "ab" * 32}, "warnings": []}).notes
    ()
    >>> land_checked({"input": None}) is None
    True
    """
    from synthgeo.io.where import LandChecked

    digest = (record.get("input") or {}).get("sha256")
    if not digest:
        return None
    return LandChecked(sha256=digest, notes=tuple(
        {"code": w["code"], "message": w["message"]} for w in record.get("warnings") or []
        if w.get("code") == "offshore"))
