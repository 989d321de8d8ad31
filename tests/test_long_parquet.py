"""A long frame written one row group at a time has the bytes of DataFrame.to_parquet."""

import hashlib

import numpy as np
import pandas as pd
import pytest

from synthgeo.release.writer import PARQUET_ROW_GROUP, write_long_parquet


@pytest.mark.parametrize(("n", "L", "ids"), [(140, 100, "int"), (11_000, 100, "str"), (3, 2, "int")])
def test_row_groups_written_one_by_one_are_to_parquets_bytes(tmp_path, n, L, ids):
    rec = (np.arange(n) * 3 if ids == "int"
           else np.array([f"r{i}" for i in range(n)], dtype=object))
    rng = np.random.default_rng(0)
    mean = rng.standard_normal((L, n))
    sd = np.broadcast_to(rng.uniform(size=(L, 1)), (L, n))  # a view, as the implicates' sd
    whole = pd.DataFrame({"record": np.tile(rec, L),
                          "implicate": np.repeat(np.arange(1, L + 1), n),
                          "mean": mean.ravel(), "sd": sd.ravel()})
    whole.to_parquet(tmp_path / "whole.parquet", index=False)

    def rows(lo, hi):
        imp, r = np.divmod(np.arange(lo, hi), n)
        return pd.DataFrame({"record": rec[r], "implicate": imp + 1, "mean": mean[imp, r],
                             "sd": sd[imp, r]})

    write_long_parquet(tmp_path / "parts.parquet", rows, L * n)
    digest = [hashlib.sha256((tmp_path / f).read_bytes()).hexdigest()
              for f in ("whole.parquet", "parts.parquet")]
    assert digest[0] == digest[1]
    assert (L * n > PARQUET_ROW_GROUP) == (n == 11_000)  # one case spans two row groups
