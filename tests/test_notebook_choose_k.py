"""Execute notebooks/03_choosing_k_chorley.ipynb with few replicates (nbclient)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_choosing_k_chorley.ipynb"


def test_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.slow
def test_choosing_k_notebook_runs(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("SYNTHGEO_NB_REPLICATES", "10")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "58 cases, 978 households" in text
    assert "No method and k on the grid meets both targets" in text and "chosen k: None" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the two curves against k, and the map
    assert os.environ.get("SYNTHGEO_NB_REPLICATES") == "10"
