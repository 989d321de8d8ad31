"""The dense Cholesky without the GIL (synthgeo.inference.factor) and the CLI's allocator setting.

The exact GP's grid cells, draws and effect draws run in two threads; SciPy's own
``cho_factor`` holds the GIL, so they ran one at a time (issue 13: ``synthgeo compare`` on the
paper design 14-15 s; 7-8 s with these). The results must stay bit for bit SciPy's.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import scipy.linalg as sl

from synthgeo._allocator import keep_freed_memory
from synthgeo.inference.factor import cho_factor, cho_inverse, cho_solve


def _spd(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2))
    d = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    return np.exp(-7.0 * d) + 0.05 * np.eye(n)


@pytest.mark.parametrize("order", ["C", "F"])
def test_factor_solve_inverse_bit_identical_to_scipy(order):
    K = _spd(120)
    ref = sl.cho_factor(K, lower=True)
    a = np.array(K, order=order)
    cf = cho_factor(a)
    assert cf[1] is True
    assert np.shares_memory(cf[0], a)  # in place: no copy of the N x N matrix
    np.testing.assert_array_equal(np.tril(cf[0]), np.tril(ref[0]))
    b = np.random.default_rng(1).random((120, 3))
    np.testing.assert_array_equal(cho_solve(cf, b), sl.cho_solve(ref, b))
    np.testing.assert_array_equal(cho_solve(cf, b[:, 0]), sl.cho_solve(ref, b[:, 0]))
    assert cho_solve(cf, b).shape == (120, 3) and cho_solve(cf, b[:, 0]).shape == (120,)
    inv, info = sl.lapack.dpotri(ref[0], lower=1)
    assert info == 0
    np.testing.assert_array_equal(cho_inverse(cf), np.tril(inv) + np.tril(inv, -1).T)


def test_bad_input_is_refused():
    with pytest.raises(np.linalg.LinAlgError, match="2-th leading minor"):
        cho_factor(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="square float64"):
        cho_factor(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="square float64"):
        cho_factor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="contiguous"):
        cho_factor(np.eye(6)[::2, ::2])
    cf = cho_factor(np.eye(3) * 4.0)
    with pytest.raises(ValueError, match="3 rows"):
        cho_solve(cf, np.ones(4))
    with pytest.raises(ValueError, match="real"):
        cho_solve(cf, np.ones(3) + 1j)
    for bad in (np.nan, np.inf):  # as SciPy's check_finite: a factor of NaN otherwise
        a = np.eye(3)
        a[1, 1] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            cho_factor(a)
    # a factor that is not cho_factor's: refused before LAPACK reads or writes past it
    # (break-it: a (300, 1) factor crashed the interpreter, a float32 one corrupted the heap)
    c = cf[0]
    for bad in ((np.ones((3, 1), order="F"), True), (np.ones(4), True),
                (np.asfortranarray(c.astype(np.float32)), True),
                (np.asfortranarray(c.astype(">f8")), True), (c.astype(np.int64), True),
                (np.ascontiguousarray(np.eye(3) + np.eye(3, k=1)), True), (c, False), c):
        with pytest.raises(ValueError):
            cho_solve(bad, np.ones(3))
        with pytest.raises(ValueError):
            cho_inverse(bad)
    frozen = np.asfortranarray(np.eye(3))
    frozen.flags.writeable = False
    assert cho_solve((frozen, True), np.ones(3)).tolist() == [1.0, 1.0, 1.0]  # only reads
    with pytest.raises(ValueError, match="writeable"):
        cho_inverse((frozen, True))  # would write into read-only memory
    empty = cho_factor(np.empty((0, 0)))  # as SciPy: an empty factor, no LAPACK call
    assert empty[0].shape == (0, 0) and cho_solve(empty, np.empty(0)).shape == (0,)
    assert cho_inverse(empty).shape == (0, 0)


def _longest_wait(factorise, a: np.ndarray) -> tuple[float, float]:
    """Longest the main thread went without a bytecode step while another thread factorised ``a``.

    With the GIL held for the whole LAPACK call the main thread waits as long as the call;
    with it released it keeps running (switch interval 10 µs). Returns (longest gap inside
    the call, the call's duration), seconds.
    """
    done, window, stamps = threading.Event(), [], []

    def work():
        window.append(time.perf_counter())
        factorise(a)
        window.append(time.perf_counter())
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        thread.join()
    finally:
        sys.setswitchinterval(old)
    start, end = window
    points = np.array([start, *[t for t in stamps if start < t < end], end])
    return float(np.diff(points).max()), end - start


def test_the_gil_is_released_during_the_factorisation():
    """Python keeps running beside our dpotrf; beside SciPy's it waits (the control)."""
    from threadpoolctl import threadpool_limits

    K = _spd(2000)
    with threadpool_limits(limits=1):
        ours, t_ours = _longest_wait(cho_factor, K.copy())
        theirs, t_theirs = _longest_wait(
            lambda a: sl.cho_factor(a, lower=True, overwrite_a=True, check_finite=False),
            np.asfortranarray(K))
    assert theirs > 0.5 * t_theirs, (theirs, t_theirs)  # SciPy's f2py wrapper holds the GIL
    assert ours < 0.25 * t_ours, (ours, t_ours)


def test_keep_freed_memory_sets_glibc_thresholds_unless_the_environment_does():
    import os

    code = ("from synthgeo._allocator import keep_freed_memory as k; print(k())")
    # without MALLOC_* (dask's Nanny puts MALLOC_TRIM_THRESHOLD_ into this process's
    # environment when a test starts a LocalCluster)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=clean).stdout.strip()
    if sys.platform.startswith("linux"):
        assert out == "True"
    env_out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={"MALLOC_TRIM_THRESHOLD_": "1000000",
                                              "PATH": ""}).stdout.strip()
    assert env_out == "False"
    assert keep_freed_memory() in (True, False)
