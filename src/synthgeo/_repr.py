"""Short, safe representations of objects that hold confidential data.

A release's objects hold the confidential records, the true responses, the posterior and the
seed (a key). Their default dataclass ``repr`` would print all of it — into a notebook cell, a
log line or an exception message. Each such class defines ``__repr__`` with
:func:`confidential_repr`, which shows only counts and settings that the release record
(``release.json``) publishes to the board anyway, and says how to see the rest.
"""

from __future__ import annotations

__all__ = ["confidential_repr"]


def confidential_repr(obj: object, **public: object) -> str:
    """``Name(key=value, ...; confidential contents not shown)``.

    Parameters
    ----------
    obj : object
        The object whose class name heads the text.
    **public
        Counts and settings that may be shown (no record-level value, no seed).

    Returns
    -------
    str

    Examples
    --------
    >>> class Box:
    ...     pass
    >>> confidential_repr(Box(), n_records=140, M_m=5506.0)
    'Box(n_records=140, M_m=5506.0; confidential contents not shown)'
    """
    inner = ", ".join(f"{k}={v!r}" for k, v in public.items())
    return f"{type(obj).__name__}({inner}; confidential contents not shown)"
