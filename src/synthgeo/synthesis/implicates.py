"""L partially synthetic implicates from the posterior predictive: the one implementation.

For ℓ = 1..L, with posterior draws spread evenly over chains and draws::

    Y†^(ℓ) = X β^(ℓ) + A D^(ℓ) w^(ℓ) + e^(ℓ),   e^(ℓ) ~ N(0, τ²^(ℓ) I)

(Quick, Holan & Wikle 2018, JRSS-A 181(3), doi:10.1111/rssa.12360, Sect. 2–3; partially
synthetic data after Reiter 2003; docs/model.md, "Synthesis"). Under ``[model] at_risk_nugget =
"marginal"`` the records of at-risk sites get e ~ N(0, σ²^(ℓ) + τ²^(ℓ)) instead: their removed
effect's variance returns as noise.

Implicate ℓ is a pure function of its posterior draw and its own seed,
``SeedSequence(seed).spawn(L)[ℓ]`` (:func:`implicate_seeds`), so implicates can be made in
any grouping and anywhere: :func:`draw_implicates` (in memory), :func:`synthgeo.pipeline.
stream.stream_release` (to Zarr, chunk by chunk) and either on a ``dask.distributed`` cluster
(:func:`synthgeo.compute.map_batches`) give the same bytes for one seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import xarray as xr

from synthgeo._seed import keyed_seeds
from synthgeo._warn import warn
from synthgeo.compute import map_batches
from synthgeo.inference.result import GPFit
from synthgeo.model.kriging import kriged_effects

__all__ = ["ImplicateDraws", "draw_implicates", "implicate_blocks", "implicate_draw_index",
           "implicate_predictive", "implicate_seeds", "selection_draw_index", "DEFAULT_CHUNK"]

#: Implicates per block (one task on a cluster).
DEFAULT_CHUNK = 10


def implicate_draw_index(n_chain: int, n_draw: int, n_implicates: int) -> np.ndarray:
    """Return indices into the flattened (chain, draw) sample, evenly spread, (n_implicates,).

    Raises
    ------
    ValueError
        If fewer than 2 implicates are asked for, or more than there are posterior draws.

    Examples
    --------
    >>> implicate_draw_index(2, 3, 3).tolist()
    [0, 2, 5]
    """
    total = n_chain * n_draw
    if not (2 <= n_implicates <= total):
        raise ValueError(
            f"`n_implicates` must be between 2 and the {total} retained posterior draws, "
            f"got {n_implicates!r}; raise `[sampling] draws` for more implicates"
        )
    return np.unique(np.round(np.linspace(0, total - 1, n_implicates)).astype(int))


def selection_draw_index(n_chain: int, n_draw: int, n_implicates: int) -> np.ndarray:
    """Return L posterior draws disjoint from the implicates' ones, evenly spread, (L,).

    The risk rule (``[model] at_risk = "risk" | "both"``) selects the records to protect on
    these draws, and the release is judged on the implicates' draws
    (:func:`implicate_draw_index`): independent posterior draws, so a record flagged because
    its estimate came out high on the selection draws is not judged on the same draws
    (regression to the mean; docs/risk-and-utility.md, "Fresh draws for judgement"). The
    draws left by :func:`implicate_draw_index`, of which L are taken evenly spread.

    Parameters
    ----------
    n_chain, n_draw : int
        Retained posterior draws per chain, and chains.
    n_implicates : int
        L.

    Returns
    -------
    ndarray of int, shape (L,)
        Flattened (chain, draw) indices (chain-major), none of which makes an implicate.

    Raises
    ------
    ValueError
        With fewer than 2L retained posterior draws (the message names the fix).

    Examples
    --------
    >>> implicate_draw_index(2, 5, 3).tolist(), selection_draw_index(2, 5, 3).tolist()
    ([0, 4, 9], [1, 5, 8])
    """
    total = n_chain * n_draw
    if total < 2 * n_implicates:
        raise ValueError(
            f"the risk rule selects records on {n_implicates} posterior draws and the release "
            f"is judged on {n_implicates} others: at least {2 * n_implicates} retained "
            f"posterior draws are needed, got {total}; raise `[sampling] draws` (or `chains`) "
            "or lower `[synthesis] n_implicates`"
        )
    rest = np.setdiff1d(np.arange(total), implicate_draw_index(n_chain, n_draw, n_implicates))
    return rest[np.unique(np.round(np.linspace(0, rest.size - 1, n_implicates)).astype(int))]


def implicate_seeds(
    seed: int | np.random.SeedSequence | np.random.Generator | None, n_implicates: int
) -> list[np.random.SeedSequence]:
    """One seed per implicate: the children ``SeedSequence(seed).spawn(n_implicates)``.

    Computed without spawning from (and so without changing) a SeedSequence that is passed
    in: the same argument always gives the same children.

    Parameters
    ----------
    seed : int, SeedSequence, Generator or None
        A Generator contributes 128 bits drawn from it; None, fresh entropy.
    n_implicates : int

    Returns
    -------
    list of numpy.random.SeedSequence

    Examples
    --------
    >>> a = implicate_seeds(5, 3)
    >>> b = np.random.SeedSequence(5).spawn(3)
    >>> all((x.generate_state(2) == y.generate_state(2)).all() for x, y in zip(a, b))
    True
    """
    return keyed_seeds(seed, range(n_implicates))


def _draw_index(n_chain: int, n_draw: int, n_implicates: int, draw_index) -> np.ndarray:
    """``draw_index`` checked (L distinct draws of the posterior), or the implicates' own."""
    if draw_index is None:
        return implicate_draw_index(n_chain, n_draw, n_implicates)
    flat = np.asarray(draw_index)
    if (flat.ndim != 1 or flat.size != n_implicates or not np.issubdtype(flat.dtype, np.integer)
            or np.unique(flat).size != flat.size or flat.min() < 0
            or flat.max() >= n_chain * n_draw):
        raise ValueError(f"`draw_index` must hold {n_implicates} distinct flattened posterior "
                         f"draws in [0, {n_chain * n_draw}), got {flat.size} values")
    return flat.astype(int)


@dataclass(frozen=True, kw_only=True)
class ImplicateDraws:
    """The posterior draws that become implicates, one row per implicate ℓ.

    Attributes
    ----------
    beta : ndarray of shape (L, p)
        Regression coefficients (model scale).
    nugget : ndarray of shape (L,)
        τ² (model scale squared), ≥ 0.
    effect : ndarray or dask.array.Array of shape (L, S)
        The spatial effect synthesised at each site: D w (restricted model), w (unrestricted),
        or with kriged values at the at-risk sites. A Dask array chunked along the first axis
        keeps it out of memory (rows are computed one block at a time).
    source_chain, source_draw : ndarray of int, shape (L,), optional
        Where in the posterior each row comes from.
    site_variance : ndarray of shape (L, S), optional
        Extra error variance per site, added to τ² (``at_risk_nugget = "marginal"``: σ² at
        the at-risk sites, 0 elsewhere); None: none.
    """

    beta: np.ndarray
    nugget: np.ndarray
    effect: object
    source_chain: np.ndarray | None = None
    source_draw: np.ndarray | None = None
    site_variance: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Check that the rows agree (L) and that τ² ≥ 0."""
        beta, nugget = np.asarray(self.beta, float), np.asarray(self.nugget, float)
        L = beta.shape[0]
        if beta.ndim != 2 or nugget.shape != (L,) or len(self.effect.shape) != 2 \
                or self.effect.shape[0] != L:
            raise ValueError(
                f"`beta` (L, p), `nugget` (L,) and `effect` (L, S) must have one row per "
                f"implicate, got shapes {beta.shape}, {nugget.shape}, {self.effect.shape}"
            )
        if not np.all(nugget >= 0):
            raise ValueError(f"`nugget` (tau2) must be >= 0, got min {nugget.min()!r}")

    @property
    def n_implicates(self) -> int:
        """L."""
        return int(np.shape(self.beta)[0])

    @classmethod
    def from_fit(cls, fit: GPFit, n_implicates: int, *, at_risk_effect: str = "zero",
                 draw_index: np.ndarray | None = None) -> ImplicateDraws:
        """Return the draws of ``fit`` that become ``n_implicates`` implicates.

        Parameters
        ----------
        fit : GPFit
            Posterior with ``beta``, ``nugget``, ``phi`` and w (stored or through
            :meth:`GPFit.effects`); ``constant_data`` with ``site_x_m``/``site_y_m`` when
            ``at_risk_effect = "kriged"``.
        n_implicates : int
            L (see :func:`implicate_draw_index`).
        at_risk_effect : {"zero", "kriged"}, default="zero"
            Effect at sites with d_s = 0 in every draw (at risk under γ = ∞): none (the
            paper), or the kriging mean of w there from the other sites' w of the same draw
            (:func:`synthgeo.model.kriging.kriged_effects`; beyond the paper, docs/model.md).
        draw_index : ndarray of int, shape (L,), optional
            The flattened (chain, draw) indices to use (e.g. :func:`selection_draw_index`);
            default :func:`implicate_draw_index`.

        Returns
        -------
        ImplicateDraws

        Raises
        ------
        ValueError
            For an unknown ``at_risk_effect``, an impossible L, or a ``draw_index`` that is
            not L distinct posterior draws.
        """
        if at_risk_effect not in ("zero", "kriged"):
            raise ValueError(f"`at_risk_effect` must be 'zero' or 'kriged', got "
                             f"{at_risk_effect!r}")
        post = fit.posterior
        n_draw = post.sizes["draw"]
        flat = _draw_index(post.sizes["chain"], n_draw, n_implicates, draw_index)
        ci, di = np.divmod(flat, n_draw)
        w = fit.effects(flat)  # (L, S)
        d = fit.scales(flat)  # (L, S)
        effect = w * d
        inactive = np.all(d == 0, axis=0)
        if at_risk_effect == "kriged" and inactive.any():
            const = fit.constant_data
            coords = np.column_stack([const["site_x_m"].values, const["site_y_m"].values])
            kriged = kriged_effects(w, post["phi"].values[ci, di], coords, inactive,
                                    n_neighbors=fit.engine.get("n_neighbors"))
            effect[:, inactive] = kriged[:, inactive]
        extra = None
        if fit.engine.get("at_risk_nugget") == "marginal":  # docs/model.md, at-risk variance
            extra = np.where(inactive[None, :], post["sigma2"].values[ci, di][:, None], 0.0)
        return cls(beta=post["beta"].values[ci, di], nugget=post["nugget"].values[ci, di],
                   effect=effect, source_chain=post["chain"].values[ci],
                   source_draw=post["draw"].values[di], site_variance=extra)

    def predictive(self, X: np.ndarray, site_index: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Return the mean and sd of the normal each implicate is drawn from.

        Returns
        -------
        mean, sd : ndarray of shape (L, n_records)
            x_iβ^(ℓ) + effect^(ℓ)_{s(i)} and (τ²^(ℓ) + site_variance^(ℓ)_{s(i)})^½, model
            scale. Without ``site_variance`` every record of implicate ℓ shares τ^(ℓ): ``sd``
            is then a read-only broadcast view of one value per implicate (no (L, N) array:
            800 MB at 10⁶ records and L = 100), with the same doubles.
        """
        effect = np.asarray(self.effect, float)
        mean = np.asarray(self.beta, float) @ np.asarray(X, float).T
        for lo in range(0, mean.shape[0], DEFAULT_CHUNK):  # in place: no second (L, N) array
            mean[lo:lo + DEFAULT_CHUNK] += effect[lo:lo + DEFAULT_CHUNK][:, site_index]
        nugget = np.asarray(self.nugget, float)[:, None]
        if self.site_variance is None:
            return mean, np.broadcast_to(np.sqrt(nugget), mean.shape)
        return mean, np.sqrt(nugget + np.asarray(self.site_variance)[:, site_index])


def implicate_predictive(fit: GPFit, X: np.ndarray, *, n_implicates: int = 100,
                         at_risk_effect: str = "zero"
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the normal each implicate is drawn from: N(x_iβ^(ℓ) + effect, sd²).

    Parameters
    ----------
    fit : GPFit
    X : ndarray of shape (n_records, n_coef)
    n_implicates : int, default=100
        L.
    at_risk_effect : {"zero", "kriged"}, default="zero"
        As :func:`draw_implicates`.

    Returns
    -------
    flat : ndarray of int, shape (L,)
        The flattened (chain, draw) index of each implicate (:func:`implicate_draw_index`).
    mean : ndarray of shape (L, n_records)
        x_iβ^(ℓ) + d_s w_s^(ℓ) (or the kriged effect at inactive sites), model scale.
    sd : ndarray of shape (L, n_records)
        τ^(ℓ); under ``[model] at_risk_nugget = "marginal"`` (``fit.engine["at_risk_nugget"]``)
        (σ²^(ℓ) + τ²^(ℓ))^½ at records of inactive sites (docs/model.md).

    Raises
    ------
    ValueError
        For an unknown ``at_risk_effect`` or an impossible ``n_implicates``.

    Examples
    --------
    >>> from synthgeo.testing import fake_fit
    >>> flat, mean, sd = implicate_predictive(fake_fit(), np.ones((4, 2)), n_implicates=5)
    >>> mean.shape, sd.shape
    ((5, 4), (5, 4))
    """
    draws = ImplicateDraws.from_fit(fit, n_implicates, at_risk_effect=at_risk_effect)
    post = fit.posterior
    flat = implicate_draw_index(post.sizes["chain"], post.sizes["draw"], n_implicates)
    mean, sd = draws.predictive(X, fit.constant_data["site_index"].values)
    return flat, mean, sd


def implicate_block(batch: tuple, *, XT: np.ndarray, site_index: np.ndarray) -> np.ndarray:
    """Implicates ``lo..lo+k-1`` from their draws and seeds: the formula, shape (k, N).

    Parameters
    ----------
    batch : tuple
        ``(beta (k, p), nugget (k,), effect (k, S), seeds (k SeedSequences))``, and
        optionally ``site_variance (k, S)`` (extra error variance per site).
    XT : ndarray of shape (p, N)
        The design matrix, transposed (released covariates).
    site_index : ndarray of int, shape (N,)
        Site of each record.

    Returns
    -------
    ndarray of shape (k, N), float64
        Row j is Xβ_j + effect_j[site_index] + sqrt(τ²_j) z_j with z_j standard normal from
        ``default_rng(seeds[j])``. Xβ is summed column by column (no BLAS), so a row does not
        depend on how rows are grouped into blocks or on the machine's thread count.
    """
    beta, nugget, effect, seeds = batch[:4]
    extra = batch[4] if len(batch) > 4 else None
    effect = np.asarray(effect, dtype=float)
    out = np.empty((len(seeds), XT.shape[1]))
    for j, seed in enumerate(seeds):
        row = out[j]
        np.multiply(XT[0], beta[j, 0], out=row)
        for c in range(1, XT.shape[0]):
            row += XT[c] * beta[j, c]
        row += effect[j][site_index]
        sd = np.sqrt(nugget[j]) if extra is None else np.sqrt(nugget[j] + extra[j][site_index])
        row += np.random.default_rng(seed).standard_normal(row.size) * sd
    return out


def implicate_blocks(
    draws: ImplicateDraws, X: np.ndarray, site_index: np.ndarray, *,
    seed: int | np.random.SeedSequence | np.random.Generator | None,
    chunk: int = DEFAULT_CHUNK, scheduler=None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(lo, block)``: implicates ``lo..lo+k-1`` (shape (k, N)), in order.

    Parameters
    ----------
    draws : ImplicateDraws
    X : ndarray of shape (N, p)
    site_index : ndarray of int, shape (N,)
    seed : int, SeedSequence, Generator or None
        Root of the per-implicate seeds (:func:`implicate_seeds`).
    chunk : int, default=DEFAULT_CHUNK
        Implicates per block; the values do not depend on it.
    scheduler : str, distributed.Client or None
        Where the blocks are computed (:func:`synthgeo.compute.map_batches`).

    Yields
    ------
    (int, ndarray of shape (k, N))
    """
    if not (isinstance(chunk, int) and chunk >= 1):
        raise ValueError(f"`chunk` must be a positive integer, got {chunk!r}")
    L = draws.n_implicates
    seeds = implicate_seeds(seed, L)
    beta, nugget = np.asarray(draws.beta, float), np.asarray(draws.nugget, float)
    starts = range(0, L, chunk)

    def batches():
        for lo in starts:
            hi = min(lo + chunk, L)
            rows = draws.effect[lo:hi]
            rows = rows.compute() if hasattr(rows, "compute") else np.asarray(rows)
            extra = () if draws.site_variance is None else (draws.site_variance[lo:hi],)
            yield (beta[lo:hi], nugget[lo:hi], rows, seeds[lo:hi], *extra)

    shared = {"XT": np.ascontiguousarray(np.asarray(X, float).T),
              "site_index": np.asarray(site_index)}
    blocks = map_batches(implicate_block, batches(), scheduler=scheduler, shared=shared)
    yield from zip(starts, blocks)


def draw_implicates(
    fit: GPFit,
    X: np.ndarray,
    *,
    n_implicates: int = 100,
    record_id: np.ndarray | None = None,
    random_seed: int | np.random.SeedSequence | np.random.Generator | None = None,
    at_risk_effect: str = "zero",
    scheduler=None,
    chunk: int = DEFAULT_CHUNK,
    draw_index: np.ndarray | None = None,
) -> xr.Dataset:
    """Draw L partially synthetic responses for every record, in memory.

    Parameters
    ----------
    fit : GPFit
        Fitted model whose posterior holds ``beta``, ``w`` (or an effect sampler), ``nugget``
        and whose ``constant_data`` holds ``scale`` and ``site_index``.
    X : ndarray of shape (n_records, n_coef)
        Design matrix (released covariates; unchanged).
    n_implicates : int, default=100
        L. A warning is issued for L < 5.
    record_id : ndarray of shape (n_records,), optional
        Values of the ``record`` coordinate (the input's record ids).
    random_seed : int, SeedSequence, Generator or None
        Root of the per-implicate seeds of the error draws e (:func:`implicate_seeds`).
    at_risk_effect : {"zero", "kriged"}, default="zero"
        See :meth:`ImplicateDraws.from_fit`.
    scheduler : str, distributed.Client or None
        Compute the blocks on a ``dask.distributed`` cluster (same values).
    chunk : int, default=DEFAULT_CHUNK
        Implicates per block (one task); the values do not depend on it.
    draw_index : ndarray of int, shape (n_implicates,), optional
        The posterior draws (flattened chain-major) to draw from; default
        :func:`implicate_draw_index`. The risk rule's selection uses
        :func:`selection_draw_index` (draws no implicate is made from).

    Returns
    -------
    xarray.Dataset
        ``y_synthetic`` with dims (``implicate``, ``record``) on the model scale, plus the
        source ``chain``/``draw`` of each implicate as coordinates. ``y_mean`` and ``y_sd``
        (implicate, record) are the normal predictive each value was drawn from,
        N(x_iβ^(ℓ) + d_s w_s^(ℓ), τ²^(ℓ)) (σ²^(ℓ) + τ²^(ℓ) at at-risk sites under
        ``at_risk_nugget = "marginal"``; :meth:`ImplicateDraws.predictive`) — confidential:
        the Rao-Blackwellised risk of :mod:`synthgeo.risk.rao_blackwell` uses them; never
        released.

    Examples
    --------
    >>> from synthgeo.testing import fake_fit
    >>> ds = draw_implicates(fake_fit(), np.ones((4, 2)), n_implicates=6, random_seed=1)
    >>> ds["y_synthetic"].shape
    (6, 4)
    """
    if n_implicates < 5:
        warn(f"only {n_implicates} implicates: Reiter intervals will be unstable")
    draws = ImplicateDraws.from_fit(fit, n_implicates, at_risk_effect=at_risk_effect,
                                    draw_index=draw_index)
    site_index = fit.constant_data["site_index"].values
    y = np.empty((draws.n_implicates, X.shape[0]))
    for lo, block in implicate_blocks(draws, X, site_index, seed=random_seed, chunk=chunk,
                                      scheduler=scheduler):
        y[lo:lo + block.shape[0]] = block
    mean, sd = draws.predictive(X, site_index)
    n_rec = X.shape[0]
    return xr.Dataset(
        {"y_synthetic": (("implicate", "record"), y),
         "y_mean": (("implicate", "record"), mean),
         "y_sd": (("implicate", "record"), sd)},
        coords={
            "implicate": np.arange(1, draws.n_implicates + 1),
            "record": np.arange(n_rec) if record_id is None else np.asarray(record_id),
            "source_chain": ("implicate", draws.source_chain),
            "source_draw": ("implicate", draws.source_draw),
        },
    )
