"""The notebooks run top to bottom (light settings) and are stored without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_exist_and_are_stored_without_outputs():
    names = [p.name for p in NOTEBOOKS]
    assert "01_paper_simulation.ipynb" in names
    assert "02_restricted_vs_unrestricted_sacramento.ipynb" in names
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("SYNTHGEO_NB_LIGHT", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    assert os.environ["SYNTHGEO_NB_LIGHT"] == "1"
