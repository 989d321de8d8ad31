"""Where batches of work run: in this process, or as tasks on a ``dask.distributed`` cluster.

One function, :func:`map_batches`, is the dispatch of every parallel loop in synthgeo (the
implicate stream and the grid posterior's cell evaluations). It
applies a pure function to a sequence of batches and yields the results **in input order**,
whatever finishes first, so a caller that folds the results (writes, sums) gets the same
bytes on a laptop and on a cluster::

    for block in map_batches(draw_block, batches, scheduler="tcp://10.0.0.5:8786",
                             shared={"X": X}):
        ...

``scheduler=None`` is a plain loop in this process (no Dask import). With an address, the
``shared`` arguments are sent to the workers once (``Client.scatter``), at most
``max_in_flight`` batches are on the cluster at a time (memory stays a few batches however
many there are), and a failed task raises here. See docs/inference.md ("Computing on a
cluster").
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["map_batches", "batch_mapper", "scheduler_client", "check_scheduler_address",
           "check_scheduler_reachable"]

#: URL schemes a ``dask.distributed`` scheduler address may use.
SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


def check_scheduler_address(address: Any, *, where: str = "`scheduler`") -> str | None:
    """Return ``address`` if it is None or a scheduler URL such as ``"tcp://host:8786"``.

    Parameters
    ----------
    address : str or None
    where : str
        How the caller names the setting, for the message.

    Returns
    -------
    str or None

    Raises
    ------
    ValueError
        For anything else, naming ``where`` and the accepted form.

    Examples
    --------
    >>> check_scheduler_address("tcp://127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    """
    if address is None:
        return None
    ok = isinstance(address, str) and "://" in address
    scheme, _, rest = address.partition("://") if ok else ("", "", "")
    if not (ok and scheme in SCHEMES and rest and not any(c.isspace() for c in rest)):
        raise ValueError(
            f"{where} must be the address of a dask.distributed scheduler such as "
            f'"tcp://10.0.0.5:8786" (schemes {", ".join(SCHEMES)}), got {address!r}'
        )
    return address


def check_scheduler_reachable(address: str, *, timeout_s: float = 10.0) -> None:
    """Connect to the scheduler at ``address`` and disconnect (before hours of work).

    Raises
    ------
    ValueError
        For a malformed address.
    OSError
        When no scheduler answers within ``timeout_s`` seconds; the message names the address.
    """
    check_scheduler_address(address)
    from distributed import Client

    try:
        with Client(address, timeout=f"{timeout_s}s", set_as_default=False):
            pass
    except OSError as exc:
        raise OSError(f"no dask.distributed scheduler answered at {address} within "
                      f"{timeout_s:g} s ({exc}); start one (`dask scheduler`) or leave "
                      "`[compute] scheduler` / `--scheduler` out to compute locally") from exc


@contextlib.contextmanager
def scheduler_client(scheduler: Any = None) -> Iterator[Any]:
    """Yield a ``distributed.Client`` for ``scheduler``, or None for local work.

    Parameters
    ----------
    scheduler : str, distributed.Client or None
        An address (a client is opened and closed around the block), a client (used as is,
        left open) or None.

    Yields
    ------
    distributed.Client or None
    """
    if scheduler is None or not isinstance(scheduler, str):
        yield scheduler
        return
    from distributed import Client

    check_scheduler_address(scheduler)
    with Client(scheduler, set_as_default=False) as client:
        yield client


def map_batches(
    fn: Callable[..., Any],
    batches: Iterable[Any],
    *,
    scheduler: Any = None,
    shared: dict[str, Any] | None = None,
    max_in_flight: int | None = None,
) -> Iterator[Any]:
    """Yield ``fn(batch, **shared)`` for each batch, in the order of ``batches``.

    Parameters
    ----------
    fn : callable
        A pure, picklable (module-level) function ``fn(batch, **shared)``; it must not rely
        on state of this process (it may run in another one).
    batches : iterable
        Consumed lazily: a generator that builds each batch keeps only the batches in flight
        in memory.
    scheduler : str, distributed.Client or None, default=None
        None: a loop in this process. Otherwise the batches run as tasks on that
        ``dask.distributed`` scheduler (e.g. ``"tcp://10.0.0.5:8786"``).
    shared : dict, optional
        Keyword arguments common to every batch (large arrays): scattered to the workers once.
    max_in_flight : int, optional
        Batches submitted but not yet yielded (default: twice the cluster's threads, at
        least 2).

    Yields
    ------
    object
        ``fn(batch, **shared)``, in input order.

    Raises
    ------
    ValueError
        For a malformed scheduler address.
    Exception
        Whatever ``fn`` raises, re-raised here (remaining tasks are cancelled).

    Examples
    --------
    >>> list(map_batches(pow, [1, 2, 3], shared={"exp": 2}))
    [1, 4, 9]
    """
    shared = dict(shared or {})
    if scheduler is None:
        for batch in batches:
            yield fn(batch, **shared)
        return
    with scheduler_client(scheduler) as client:
        yield from _on_cluster(client, fn, batches, shared, max_in_flight)


def _on_cluster(client, fn, batches, shared, max_in_flight) -> Iterator[Any]:
    """Scatter ``shared``; submit with a sliding window; yield results in order."""
    scattered = {k: _scatter(client, v) for k, v in shared.items()}
    try:
        yield from _submit_in_order(client, fn, batches, scattered, max_in_flight)
    finally:
        for fut in scattered.values():
            fut.release()


def _scatter(client, value):
    """Send ``value`` to every worker once; return its future."""
    # a one-element list: the value is sent as one object (a list would be split)
    return client.scatter([value], broadcast=True)[0]


def _submit_in_order(client, fn, batches, scattered, max_in_flight) -> Iterator[Any]:
    """Submit ``fn(batch, **scattered)`` with a sliding window; yield results in order."""
    if max_in_flight is None:
        threads = sum(client.nthreads().values()) or 1
        max_in_flight = max(2, 2 * threads)
    window: deque = deque()
    it = iter(batches)
    try:
        for batch in it:
            window.append(client.submit(fn, batch, **scattered, pure=False))
            if len(window) >= max_in_flight:
                yield _take(window)
        while window:
            yield _take(window)
    finally:
        if window:
            client.cancel(list(window))


def _take(window: deque) -> Any:
    fut = window.popleft()
    try:
        return fut.result()
    finally:
        fut.release()


def _one_thread_call(batch: Any, *, fn: Callable[[Any], Any]) -> Any:
    """``fn(batch)`` with BLAS limited to one thread (the same floats on every worker)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return fn(batch)


def batch_mapper(scheduler: Any) -> Callable[[Callable, list], list] | None:
    """Return a ``map_batches(fn, batches) -> list`` for the grid quadrature, or None (local).

    With a scheduler, each batch of grid cells is a task on the ``dask.distributed`` cluster
    (:func:`map_batches`; the log-density function and its data are scattered once); BLAS is
    limited to one thread in each task, as in the local thread pool, so the log densities
    and hence the files are the same as a local run's.

    Parameters
    ----------
    scheduler : str, distributed.Client or None
        None: return None (the quadrature's own thread pool).

    Returns
    -------
    callable or None

    Examples
    --------
    >>> batch_mapper(None) is None
    True
    """
    if scheduler is None:
        return None
    if isinstance(scheduler, str):  # a client is used as it is
        check_scheduler_address(scheduler)
    return _ClusterMapper(scheduler)


class _ClusterMapper:
    """``map_batches(fn, batches) -> list`` on a cluster, with one client and one scatter per fn.

    A grid fit calls it once per batch of cells (a Laplace search: once per point); the
    log-density function carries the model's data (at 10⁵ records the NNGP's neighbour blocks,
    ~200 MB), so it is scattered to the workers the first time it is seen and reused after,
    and the connection is opened once. Closed (client and scattered data) when the mapper is
    garbage-collected or at exit.
    """

    def __init__(self, scheduler: Any):
        self.scheduler = scheduler
        self._client = None
        self._scattered: dict[int, tuple[Callable, Any]] = {}
        self._finalizer = None

    def _get_client(self):
        if self._client is None:
            if isinstance(self.scheduler, str):
                import weakref

                from distributed import Client

                self._client = Client(self.scheduler, set_as_default=False)
                self._finalizer = weakref.finalize(self, self._client.close)
            else:
                self._client = self.scheduler
        return self._client

    def __call__(self, fn: Callable[[Any], Any], batches: list) -> list:
        client = self._get_client()
        held = self._scattered.get(id(fn))
        if held is None or held[0] is not fn:
            held = (fn, _scatter(client, fn))
            self._scattered[id(fn)] = held
        return list(_submit_in_order(client, _one_thread_call, batches, {"fn": held[1]},
                                     None))
