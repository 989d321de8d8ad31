"""Fit the collapsed GP with PyMC + nutpie, check convergence, recover β and w.

Sampler choice (measured in ``benchmarks/bench_samplers.py``): nutpie's NUTS on the PyMC model
compiled with its numba backend. PyMC's own sampler over PyTensor's C backend (pip build, no
BLAS) took > 8 minutes for N = 140 where nutpie took under a minute, compilation included.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from synthgeo._errors import SpecError
from synthgeo.config import SamplingConfig
from synthgeo.inference.conditionals import recover_effects
from synthgeo.inference.result import GPFit, build_fit
from synthgeo.model.kernels import METRES_PER_KM, Sites
from synthgeo.model.restricted_gp import GPPriors, build_model
from synthgeo.model.smoothing import Smoothing

__all__ = ["fit_gp"]

log = logging.getLogger(__name__)


def fit_gp(
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    priors: GPPriors,
    coef_names: list[str],
    scale: np.ndarray | None = None,
    config: SamplingConfig | None = None,
    parametrization: str = "ridge",
    prior_form: str = "independent",
    random_seed: int | None = None,
    label: str = "model",
    progressbar: bool = False,
) -> GPFit:
    """Sample the collapsed posterior with nutpie, then draw β and w per retained draw.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Response on the model scale.
    X : ndarray of shape (n_records, n_coef)
        Design matrix with intercept.
    sites : Sites
        Sites in metres.
    priors : GPPriors
    coef_names : list of str
    scale : ndarray of shape (n_sites,), optional
        Diagonal of D; ``None`` = unrestricted.
    config : SamplingConfig, optional
        Chains, draws, tune, target_accept, backend.
    parametrization : {"natural", "ridge"}
        See :func:`synthgeo.model.restricted_gp.build_model`.
    prior_form : {"independent", "conjugate"}
        See :func:`synthgeo.model.restricted_gp.build_model` ("conjugate": the grid's priors).
    random_seed : int, optional
        Seed for NUTS and the β/w draws (overrides ``config.seed``).
    label : str
        Name used in log messages.
    progressbar : bool
        Show nutpie's progress bar (drawn by nutpie on a terminal only) and a tqdm bar for
        the recovery of β and w.

    Returns
    -------
    GPFit
        Convergence is checked but not enforced here; see :func:`synthgeo.pipeline.run_release`.
    """
    import nutpie

    config = config or SamplingConfig()
    seed = config.seed if random_seed is None else random_seed
    ss = np.random.SeedSequence(seed)
    nuts_seed, recover_seed = (int(s.generate_state(1)[0]) for s in ss.spawn(2))
    if isinstance(scale, Smoothing):
        if scale.depends_on_nugget:
            raise SpecError(
                '`[model] gamma = "auto"` (gamma evaluated per draw) needs `[sampling] sampler '
                '= "grid"`; the NUTS route takes a fixed gamma'
            )
        scale = scale.scale()
    d = np.ones(sites.n_sites) if scale is None else np.asarray(scale, dtype=float)
    model = build_model(y, X, sites, scale=d, priors=priors, coef_names=coef_names,
                        parametrization=parametrization, prior_form=prior_form)
    # One BLAS thread per process: the matrices are small and the chains already use the
    # cores; multi-threaded OpenBLAS on 140 x 140 factorisations was measured 50x slower.
    with threadpool_limits(limits=1):
        return _fit(model, nutpie, config, nuts_seed, recover_seed, y, X, sites, d, priors,
                    coef_names, label, progressbar, prior_form)


def _fit(model, nutpie, config, nuts_seed, recover_seed, y, X, sites, d, priors, coef_names,
         label, progressbar, prior_form) -> GPFit:
    t0 = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model, backend=config.backend)
    t1 = time.perf_counter()
    log.info("%s: compiled in %.1f s; sampling %d x (%d + %d)", label, t1 - t0, config.chains,
             config.tune, config.draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        idata = nutpie.sample(
            compiled, chains=config.chains, draws=config.draws, tune=config.tune,
            seed=nuts_seed, target_accept=config.target_accept, progress_bar=progressbar,
            cores=min(config.chains, 2),
        )
    t2 = time.perf_counter()
    if idata.posterior.sizes["draw"] < config.draws:
        # nutpie catches Ctrl-C and returns the draws so far; a release must not use them
        raise KeyboardInterrupt
    post = idata.posterior
    post["range"] = post["range_km"] * METRES_PER_KM
    post["range"].attrs["units"] = "m"
    post["phi"] = 3.0 / post["range"]
    post["phi"].attrs["units"] = "1/m"
    post = post.drop_vars([v for v in post.data_vars if v not in ("sigma2", "nugget", "range",
                                                                   "phi", "range_km")])
    effects = recover_effects(post, y, X, sites, scale=d, priors=priors, coef_names=coef_names,
                              random_seed=recover_seed, progressbar=progressbar,
                              desc=f"{label}: recover β, w", prior_form=prior_form)
    post = post.drop_vars("range_km").merge(effects)
    t3 = time.perf_counter()
    return build_fit(
        post, y=y, sites=sites, scale=d, priors=priors, base=idata, label=label,
        seconds={"compile": t1 - t0, "sample": t2 - t1, "recover": t3 - t2},
        engine={"sampler": "nutpie", "gp": "exact"},
    )
