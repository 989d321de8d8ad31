"""The analysts' privacy budgets and the audit log of verification requests (SQLite).

Two tables of their own, through SQLAlchemy, so that they can move into the release register
later: ``verify_budget`` (one row per analyst: the total ε the agency granted) and
``verify_requests`` (one row per request, granted or refused, appended and never updated).
Composition is basic sequential composition (Dwork & Roth 2014, Thm 3.16): the ε of an
analyst's granted requests add up, and a request whose ε would take the sum past the total is
refused. A request's ε is charged and logged in one transaction.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import (
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    select,
)

from synthgeo._errors import InputError

__all__ = ["BudgetStore"]

_META = MetaData()
BUDGETS = Table(
    "verify_budget", _META,
    Column("analyst", String, primary_key=True),
    Column("total_epsilon", Float, nullable=False),
    Column("set_at", DateTime(timezone=True), nullable=False),
)
REQUESTS = Table(
    "verify_requests", _META,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("analyst", String, nullable=False),
    Column("release_json_sha256", String),
    Column("formula", Text, nullable=False),
    Column("family", String, nullable=False),
    Column("mode", String, nullable=False),  # "dp" or "non_private"
    Column("epsilon", Float),  # charged ε (granted dp requests); null otherwise
    Column("status", String, nullable=False),  # "granted" or "refused"
    Column("reason", Text),  # why refused, or the agency's reason for a non-private answer
)
#: A tolerance on the sum of ε (floating point: 0.1 + 0.2 must fit a total of 0.3).
_TOL = 1e-12


class BudgetStore:
    """An SQLite file of analysts' ε budgets and the audit log.

    Parameters
    ----------
    path : path
        The database file (created with its tables if missing).

    Examples
    --------
    >>> import tempfile
    >>> store = BudgetStore(Path(tempfile.mkdtemp()) / "v.sqlite")
    >>> store.set_total("ana", 1.0)
    >>> store.charge("ana", 0.4, formula="y ~ x", family="gaussian")
    >>> round(store.remaining("ana"), 3), len(store.requests())
    (0.6, 1)
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._engine = create_engine(f"sqlite:///{self.path}", connect_args={"timeout": 60})
        # every transaction takes SQLite's write lock at once (BEGIN IMMEDIATE), so a check of
        # the budget and the charge that follows it cannot interleave with another request's
        event.listen(self._engine, "connect", _autocommit_driver)
        event.listen(self._engine, "begin", _begin_immediate)
        _META.create_all(self._engine)

    def __repr__(self) -> str:
        """Show the file only."""
        return f"BudgetStore({str(self.path)!r})"

    def set_total(self, analyst: str, total_epsilon: float) -> None:
        """Grant ``analyst`` a total ε (an agency decision; replaces an earlier total)."""
        _check_analyst(analyst)
        if not (isinstance(total_epsilon, (int, float)) and total_epsilon > 0
                and total_epsilon != float("inf")):
            raise InputError(f"the budget (--budget) must be a positive finite ε, got "
                             f"{total_epsilon!r}")
        with self._engine.begin() as con:
            con.execute(BUDGETS.delete().where(BUDGETS.c.analyst == analyst))
            con.execute(insert(BUDGETS).values(analyst=analyst, total_epsilon=float(total_epsilon),
                                               set_at=_now()))

    def total(self, analyst: str) -> float | None:
        """Return the analyst's total ε, None when the agency has set none."""
        with self._engine.begin() as con:
            return _total(con, analyst)

    def spent(self, analyst: str) -> float:
        """Return the ε of the analyst's granted requests, summed (sequential composition)."""
        with self._engine.begin() as con:
            return _spent(con, analyst)

    def remaining(self, analyst: str) -> float:
        """Return total minus spent (0 when no total is set)."""
        with self._engine.begin() as con:
            total = _total(con, analyst)
            return 0.0 if total is None else max(total - _spent(con, analyst), 0.0)

    def check(self, analyst: str, epsilon: float | None) -> None:
        """Refuse a request the analyst's budget does not cover (ε None: non-private, free).

        Raises
        ------
        InputError
            No budget set, or the ε asked would take the spent ε past the total.
        """
        with self._engine.begin() as con:
            self._check(con, analyst, epsilon)

    def _check(self, con, analyst: str, epsilon: float | None) -> None:
        _check_analyst(analyst)
        if epsilon is None:
            return
        total = _total(con, analyst)
        if total is None:
            raise InputError(f"analyst {analyst!r} has no privacy budget in {str(self.path)!r}; "
                             "the agency sets one with --budget EPSILON")
        spent = _spent(con, analyst)
        if spent + epsilon > total + _TOL:
            raise InputError(f"analyst {analyst!r} has spent ε = {spent:g} of a budget of "
                             f"{total:g}; this request (ε = {epsilon:g}) would exceed it: only "
                             f"ε = {max(total - spent, 0.0):g} remains (a smaller --epsilon, or "
                             "the agency raises --budget)")

    def charge(self, analyst: str, epsilon: float | None, *, formula: str, family: str,
               release_json_sha256: str | None = None, reason: str | None = None) -> None:
        """Check the budget and log a granted request in one transaction (ε None: non-private).

        The transaction is SQLite's ``BEGIN IMMEDIATE``: two requests at once cannot both
        spend the last ε (the second waits, then reads the first one's charge).

        Raises
        ------
        InputError
            As :meth:`check`; nothing is logged then (the caller logs the refusal).
        """
        with self._engine.begin() as con:
            self._check(con, analyst, epsilon)
            con.execute(insert(REQUESTS).values(
                at=_now(), analyst=analyst, release_json_sha256=release_json_sha256,
                formula=formula, family=family,
                mode="dp" if epsilon is not None else "non_private", epsilon=epsilon,
                status="granted", reason=reason))

    def log_refusal(self, analyst: str, *, formula: str, family: str, epsilon: float | None,
                    reason: str, release_json_sha256: str | None = None) -> None:
        """Append a refused request (no ε charged) with the one-line reason."""
        with self._engine.begin() as con:
            con.execute(insert(REQUESTS).values(
                at=_now(), analyst=str(analyst), release_json_sha256=release_json_sha256,
                formula=str(formula), family=str(family),
                mode="dp" if epsilon is not None else "non_private", epsilon=None,
                status="refused", reason=reason))

    def requests(self, analyst: str | None = None) -> pd.DataFrame:
        """Return the audit log, oldest first (one analyst's, or all)."""
        query = select(REQUESTS).order_by(REQUESTS.c.id)
        if analyst is not None:
            query = query.where(REQUESTS.c.analyst == analyst)
        with self._engine.connect() as con:
            return pd.DataFrame(con.execute(query).mappings().all(),
                                columns=[c.name for c in REQUESTS.columns])


def _total(con, analyst: str) -> float | None:
    return con.execute(select(BUDGETS.c.total_epsilon)
                       .where(BUDGETS.c.analyst == analyst)).scalar()


def _spent(con, analyst: str) -> float:
    return float(con.execute(
        select(func.coalesce(func.sum(REQUESTS.c.epsilon), 0.0))
        .where(REQUESTS.c.analyst == analyst, REQUESTS.c.status == "granted")).scalar())


def _autocommit_driver(dbapi_connection, _record) -> None:
    """Leave transactions to SQLAlchemy's BEGIN (the pysqlite recipe of its docs)."""
    dbapi_connection.isolation_level = None


def _begin_immediate(connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _check_analyst(analyst) -> None:
    if not isinstance(analyst, str) or not analyst.strip():
        raise InputError("name the analyst (--analyst NAME): ε is charged to them")


def _now() -> datetime:
    return datetime.now(UTC)
