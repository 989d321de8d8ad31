"""One axis (space in metres, or time in seconds) of the outlier policy: state and disposals.

The policy (docs/locations.md, "The outlier policy") runs the same logic on each axis:
isolation ratio from the (k−1)-th nearest other subject, and three disposals — spatial
microaggregation to a group centroid (merge), the smallest dyadic cell holding ≥ k records
(generalise; a quadtree in 2-D, nested time bins in 1-D) and removal (suppress, decided for the
whole record by the driver in :mod:`synthgeo.locations.outliers`).

r_max bounds every disposal (docs/locations.md, "The bound on every disposal"): a disposal's
*radius* — the largest distance from a record's true location to the point published for it
that the disposal allows — is at most the bound (``disposal_bound_ratio`` · r_max; r_max itself
in the spec and on the command line). A cell of side s in n dimensions has radius
s·√n / 2 (its half-diagonal: a record in a corner is that far from the published centre); a
merge group's radius is the largest distance from a member's true location to the centroid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist, pdist

from synthgeo.locations.nearest import nearest_other_subjects

OK, MERGE, GENERALISE, SUPPRESS = 0, 1, 2, 3
LABELS = ("ok", "merge", "generalise", "suppress")
POINT, MERGED, GENERALISED = 0, 1, 2

# nested time bins (seconds): 1 s, 1 min, 5 min, 15 min, 30 min, 1 h, 3 h, 6 h, 12 h, 1 day,
# 1 week, 4 weeks, 52 weeks; each divides the next, all aligned to 1970-01-01T00:00Z
TIME_LADDER_S = (1, 60, 300, 900, 1800, 3600, 10800, 21600, 43200, 86400, 604800, 2419200,
                 31449600)


def cell_radius(size: np.ndarray | float, n_dims: int) -> np.ndarray:
    """Radius of a cell of side `size` in `n_dims` dimensions: its half-diagonal, size·√n / 2.

    The largest distance from a location inside the cell to the published centre (metres or
    seconds; docs/locations.md, "The bound on every disposal").

    Examples
    --------
    >>> round(float(cell_radius(4096.0, 2)), 1)
    2896.3
    """
    return np.asarray(size, dtype=np.float64) * (np.sqrt(n_dims) / 2.0)


def classify(ratio: np.ndarray, merge_ratio: float, generalise_ratio: float) -> np.ndarray:
    """Label codes from isolation ratios ι: ok (ι ≤ 1), merge, generalise, suppress (ι > g)."""
    out = np.full(ratio.shape, SUPPRESS, dtype=np.int8)
    out[ratio <= generalise_ratio] = GENERALISE
    out[ratio <= merge_ratio] = MERGE
    out[ratio <= 1.0] = OK
    return out


def cell_ladder(coords: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Nested cell sizes and the grid origin for an axis; the last size covers all records.

    Space: sides 1, 2, 4, … metres (a quadtree) from the floor of the smallest coordinates.
    Time: :data:`TIME_LADDER_S`, then doubling, aligned to the Unix epoch.
    """
    lo, hi = coords.min(axis=0), coords.max(axis=0)
    if kind == "space":
        origin, sizes = np.floor(lo), [1.0]
    else:
        origin, sizes = np.zeros(coords.shape[1]), [float(s) for s in TIME_LADDER_S]

    def one_cell(size: float) -> bool:
        return bool(np.all(np.floor((lo - origin) / size) == np.floor((hi - origin) / size)))

    while not one_cell(sizes[-1]):
        sizes.append(sizes[-1] * 2.0)
    return np.asarray(sizes), origin


class Axis:
    """Mutable state of one axis during the fixed-point iteration (internal)."""

    def __init__(self, name: str, coords: np.ndarray, r_max: float, subject: np.ndarray,
                 k: int, *, has_subjects: bool = True, max_diameter: float | None = None,
                 max_radius: float | None = None) -> None:
        self.name = name
        self.max_diameter = float(r_max if max_diameter is None else max_diameter)
        # the bound on every disposal: largest distance from a record to its published point
        self.max_radius = float(r_max if max_radius is None else max_radius)
        self.true = np.asarray(coords, dtype=np.float64)
        if self.true.ndim == 1:
            self.true = self.true[:, None]
        n = len(self.true)
        self.r_max = float(r_max)
        self.subject = subject
        # without a subject column every record is its own subject (faster neighbour search)
        self.subject_arg = subject if has_subjects else None
        self.k = int(k)
        self.published = self.true.copy()
        self.status = np.full(n, POINT, dtype=np.int8)
        self.sizes, self.origin = cell_ladder(self.true, "space" if name == "space" else "time")
        # levels whose cells lie within r_max of every location inside them (the bound)
        self.n_levels = int(np.sum(cell_radius(self.sizes, self.true.shape[1])
                                   <= self.max_radius * (1 + 1e-12)))
        self.level = np.full(n, -1, dtype=np.int64)
        self.cell = np.zeros_like(self.true, dtype=np.int64)
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []
        self.component = np.arange(n)
        self.first_distance = np.full(n, np.nan)
        self.label = np.zeros(n, dtype=np.int8)
        self.n_too_wide = 0  # merges refused because the group would be too wide
        self.n_unplaced = 0  # generalisations failed: no cell within r_max held k (suppressed)
        self.n_dissolved = 0  # merge groups dissolved: a member left, the centroid moved too far

    # -- isolation and validity -----------------------------------------------------------------
    def isolation(self, query: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Return the distances to the k−1 nearest other active subjects, shape (n_query, k−1).

        The last column is d_i, from the record's published location; inf when fewer exist.
        """
        dist, _ = nearest_other_subjects(self.published, self.k - 1, subject=self.subject_arg,
                                         query=query, candidates=np.flatnonzero(active))
        return dist

    def group_sizes(self, active: np.ndarray) -> np.ndarray:
        """Distinct active subjects in each record's merge group (0 for non-members)."""
        members = active & (self.status == MERGED)
        out = np.zeros(len(self.true), dtype=np.int64)
        if not members.any():
            return out
        comp = self.component[members].astype(np.int64)
        n_subj = int(self.subject.max()) + 1
        pairs = np.unique(comp * n_subj + self.subject[members])  # distinct (group, subject)
        per_group = np.bincount(pairs // n_subj, minlength=len(self.true))
        out[members] = per_group[comp]
        return out

    def cell_counts(self, records: np.ndarray, level: np.ndarray, active: np.ndarray,
                    movers: np.ndarray) -> np.ndarray:
        """Distinct subjects in the level-``level`` cell holding each record's true location.

        Counted: the record itself; active exact or merged records whose published point lies
        in the cell; active generalised records whose own cell lies inside it. Records in
        `movers` (being generalised in this pass) count only for themselves.
        """
        out = np.zeros(len(records), dtype=np.int64)
        others = active & ~movers
        for lev in np.unique(level):
            sel = level == lev
            size = self.sizes[lev]
            ok = others & ((self.status != GENERALISED) | (self.level <= lev))
            idx = np.flatnonzero(ok)
            key_o = self._keys(self.published[idx], size)
            q = records[sel]
            key_q = self._keys(self.true[q], size)
            codes = pd.factorize(np.concatenate([key_o, key_q]))[0].astype(np.int64)
            n_subj = int(self.subject.max()) + 1
            pairs = np.unique(codes[:len(key_o)] * n_subj + self.subject[idx])  # (cell, subject)
            per_cell = np.bincount(pairs // n_subj, minlength=int(codes.max()) + 1)
            cq = codes[len(key_o):]
            base = per_cell[cq]
            # is the record's own subject already among the others in its cell?
            mine = cq * n_subj + self.subject[q]
            pos = np.minimum(np.searchsorted(pairs, mine), max(len(pairs) - 1, 0))
            own = (pairs[pos] == mine) if len(pairs) else np.zeros(len(q), dtype=bool)
            out[sel] = base + (~own).astype(np.int64)
        return out

    def smallest_cell_radius(self, k_values: range) -> np.ndarray:
        """Radius of the smallest cell holding ≥ k' subjects around each record, exact points.

        For the first-pass estimate of the r_max that would meet the caps (every record at its
        true location). Returns shape (n_records, len(k_values)); inf where no cell of the
        ladder holds k'.
        """
        n = len(self.true)
        out = np.full((n, len(k_values)), np.inf)
        everyone, nobody = np.arange(n), np.zeros(n, dtype=bool)
        radii = cell_radius(self.sizes, self.true.shape[1])
        for lev in range(len(self.sizes)):  # smallest first; stop once every record has k
            if self.subject_arg is None:  # every record its own subject: a plain count
                codes = pd.factorize(self._keys(self.true, self.sizes[lev]))[0]
                count = np.bincount(codes)[codes]
            else:
                count = self.cell_counts(everyone, np.full(n, lev), ~nobody, nobody)
            for j, kk in enumerate(k_values):
                out[np.isinf(out[:, j]) & (count >= kk), j] = radii[lev]
            if np.isfinite(out).all():
                break
        return out

    def _keys(self, pts: np.ndarray, size: float) -> np.ndarray:
        """One int64 key per point for its cell of side `size` (1-D or 2-D)."""
        ij = np.floor((pts - self.origin) / size).astype(np.int64)
        if ij.shape[1] == 1:
            return ij[:, 0]
        return ij[:, 0] * (2**32) + ij[:, 1]

    # -- disposals ------------------------------------------------------------------------------
    def merge(self, query: np.ndarray, candidates: np.ndarray, active: np.ndarray,
              max_diameter: float) -> tuple[np.ndarray, np.ndarray]:
        """Microaggregate each query record with its k−1 nearest other candidate subjects.

        Queries are taken least isolated first. A query's group joins every existing group that
        shares a member with it (chained merges); the merge is accepted only when the united
        group's diameter (largest distance between two members' true locations) is at most
        `max_diameter` and every member's true location lies within r_max of the united group's
        centroid, so no group, chained or not, is wider (docs/locations.md, "The bound on every
        disposal"). Accepted members are published at the centroid by :meth:`regroup`. Returns
        the query records not merged, to generalise instead: those with fewer than k−1 other
        subjects, and those whose group would be too wide (counted in ``n_too_wide``).
        """
        if len(query) == 0:
            return query, query
        dist, nb = nearest_other_subjects(self.published, self.k - 1, subject=self.subject_arg,
                                          query=query, candidates=candidates)
        groups = _Groups(self.true, np.flatnonzero(active & (self.status == MERGED)),
                         self.component, max_radius=self.max_radius)
        accepted = np.zeros(len(query), dtype=bool)
        for r in np.argsort(dist[:, -1], kind="stable"):
            if (nb[r] >= 0).all():
                accepted[r] = groups.join(np.append(nb[r], query[r]), max_diameter)
        short = (nb < 0).any(axis=1)
        q, members = query[accepted], nb[accepted]
        if len(q):
            self.edges.append((np.repeat(q, members.shape[1]), members.ravel()))
        self.status[q] = MERGED
        self.status[members.ravel()] = MERGED
        # a query whose own group was too wide may have joined another's as a member since
        too_wide = ~accepted & ~short & ~groups.joined[query]
        self.n_too_wide += int(too_wide.sum())
        return query[short], query[too_wide]

    def regroup(self, active: np.ndarray) -> None:
        """Recompute merge groups over active merged records and move them to the centroids."""
        n = len(self.true)
        members = active & (self.status == MERGED)
        if not self.edges:
            return
        a = np.concatenate([e[0] for e in self.edges])
        b = np.concatenate([e[1] for e in self.edges])
        keep = members[a] & members[b]
        graph = coo_matrix((np.ones(int(keep.sum())), (a[keep], b[keep])), shape=(n, n))
        _, comp = connected_components(graph, directed=False)
        self.component = comp.astype(np.int64)
        idx = np.flatnonzero(members)
        c = comp[idx]
        sums = np.zeros((n, self.true.shape[1]))
        np.add.at(sums, c, self.true[idx])
        counts = np.bincount(c, minlength=n).astype(np.float64)
        self.published[idx] = sums[c] / counts[c][:, None]
        alone = counts[c] == 1  # lost every partner (suppressed or generalised): a point
        # a group that lost members has a new centroid, possibly beyond r_max of a member (only
        # when group_diameter_ratio > 1; the diameter itself cannot grow): dissolved, its
        # members classified again from their true locations in the next pass
        shift = np.sqrt(((self.true[idx] - self.published[idx]) ** 2).sum(axis=1))
        widest = np.zeros(n)
        np.maximum.at(widest, c, shift)
        wide = widest[c] > self.max_radius * (1 + 1e-12)
        self.n_dissolved += len(np.unique(c[wide & ~alone]))
        loose = idx[alone | wide]
        self.status[loose] = POINT
        self.published[loose] = self.true[loose]

    def generalise(self, query: np.ndarray, active: np.ndarray) -> np.ndarray:
        """Publish each query record as the smallest cell holding ≥ k subjects, within r_max.

        Only cells whose radius (half-diagonal, :func:`cell_radius`) is at most r_max are
        tried. Returns the query records for which none of them holds k (to suppress; counted
        in ``n_unplaced``).
        """
        if len(query) == 0:
            return query
        movers = np.zeros(len(self.true), dtype=bool)
        movers[query] = True
        found = np.full(len(query), -1, dtype=np.int64)
        for lev in range(self.n_levels):
            todo = np.flatnonzero(found < 0)
            if not todo.size:
                break
            n = self.cell_counts(query[todo], np.full(len(todo), lev), active, movers)
            found[todo[n >= self.k]] = lev
        ok = found >= 0
        q = query[ok]
        lev = found[ok]
        size = self.sizes[lev][:, None]
        cell = np.floor((self.true[q] - self.origin) / size).astype(np.int64)
        self.status[q] = GENERALISED
        self.level[q] = lev
        self.cell[q] = cell
        self.published[q] = self.origin + (cell + 0.5) * size
        self.n_unplaced += int((~ok).sum())
        return query[~ok]

    def cells_valid(self, active: np.ndarray) -> np.ndarray:
        """Active generalised records whose cell still holds ≥ k subjects."""
        gen = np.flatnonzero(active & (self.status == GENERALISED))
        valid = np.zeros(len(self.true), dtype=bool)
        if gen.size:
            n = self.cell_counts(gen, self.level[gen], active, np.zeros(len(self.true), bool))
            valid[gen[n >= self.k]] = True
        return valid

    def release_record(self, idx: np.ndarray) -> None:
        """Forget a record's disposal (it is suppressed, or will be re-disposed)."""
        self.status[idx] = POINT
        self.level[idx] = -1
        self.published[idx] = self.true[idx]

    # -- reporting ------------------------------------------------------------------------------
    def group_table(self, active: np.ndarray) -> tuple[np.ndarray, list[dict]]:
        """Return the group id per record (−1 if none) and one row per group.

        Rows: members, subjects, diameter (largest distance between two members' true
        locations) and largest displacement (true location to the published centroid).
        """
        members = np.flatnonzero(active & (self.status == MERGED))
        gid = np.full(len(self.true), -1, dtype=np.int64)
        rows: list[dict] = []
        if not members.size:
            return gid, rows
        comps, inv = np.unique(self.component[members], return_inverse=True)
        gid[members] = inv
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(len(comps) + 1))
        for g in range(len(comps)):
            m = members[order[bounds[g]:bounds[g + 1]]]
            diam = float(pdist(self.true[m]).max()) if len(m) > 1 else 0.0
            shift = float(np.sqrt(((self.true[m] - self.published[m]) ** 2).sum(axis=1)).max())
            rows.append({"group": g, "n_records": len(m),
                         "n_subjects": int(len(np.unique(self.subject[m]))),
                         "diameter": diam, "exceeds_r_max": diam > self.r_max,
                         "max_displacement": shift,
                         "displacement_exceeds_r_max": shift > self.r_max})
        return gid, rows

    def cell_size(self) -> np.ndarray:
        """Cell side per record (NaN unless generalised)."""
        out = np.full(len(self.true), np.nan)
        gen = self.status == GENERALISED
        out[gen] = self.sizes[self.level[gen]]
        return out


class _Groups:
    """Merge groups during one merge step: members and diameters, united as merges are accepted.

    Parameters
    ----------
    true : ndarray of shape (n_records, n_dims)
        True locations (metres or seconds).
    members : ndarray of int
        Records already in a merge group (active, merged).
    component : ndarray of int, shape (n_records,)
        Their group labels (from :meth:`Axis.regroup`).
    max_radius : float
        Largest distance allowed from a member's true location to its group's centroid
        (r_max).
    """

    def __init__(self, true: np.ndarray, members: np.ndarray, component: np.ndarray, *,
                 max_radius: float) -> None:
        self.true = true
        self.max_radius = float(max_radius)
        self.of = np.full(len(true), -1, dtype=np.int64)  # group of each record (−1: none)
        self.joined = np.zeros(len(true), dtype=bool)  # in a group united in this step
        self.members: dict[int, np.ndarray] = {}
        self.diameter: dict[int, float] = {}
        self.next = 0
        for label in np.unique(component[members]):
            idx = members[component[members] == label]
            self._store(idx, float(pdist(true[idx]).max()) if len(idx) > 1 else 0.0)

    def _store(self, idx: np.ndarray, diameter: float) -> None:
        g = self.next
        self.next += 1
        self.members[g] = idx
        self.diameter[g] = diameter
        self.of[idx] = g

    def join(self, records: np.ndarray, max_diameter: float) -> bool:
        """Unite `records` and the groups they touch if the result is at most `max_diameter` wide.

        Returns whether the union was made: its diameter is at most `max_diameter` and every
        member lies within ``max_radius`` of its centroid. The diameter of a union is the
        largest of its parts' diameters and of the distances between members of different parts.
        """
        touched = np.unique(self.of[records][self.of[records] >= 0])
        loose = np.unique(records[self.of[records] < 0])
        parts = [self.members[g] for g in touched] + [loose[i:i + 1] for i in range(len(loose))]
        widest = max([self.diameter[g] for g in touched] + [0.0])
        for a in range(len(parts)):
            if widest > max_diameter:
                return False
            rest = np.concatenate(parts[a + 1:]) if a + 1 < len(parts) else None
            if rest is not None and len(rest):
                widest = max(widest, float(cdist(self.true[parts[a]], self.true[rest]).max()))
        if widest > max_diameter:
            return False
        union = np.concatenate(parts)
        pts = self.true[union]
        if np.sqrt(((pts - pts.mean(axis=0)) ** 2).sum(axis=1)).max() > \
                self.max_radius * (1 + 1e-12):
            return False
        for g in touched:
            del self.members[g], self.diameter[g]
        self._store(union, widest)
        self.joined[union] = True
        return True
