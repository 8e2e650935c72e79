"""The notebooks in notebooks/ run top to bottom (on the CPU backend, in a temporary folder)."""

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")


def run_notebook(path, cwd):
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return notebook


def outputs(notebook, kind):
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs
            if o.output_type == kind or kind in o.get("data", {})]


@pytest.mark.timeout(300)
def test_quickstart(repo_root, tmp_path):
    nb = run_notebook(repo_root / "notebooks" / "quickstart.ipynb", tmp_path)
    text = "".join(o.get("text", "") for o in outputs(nb, "stream"))
    assert "turn 3: outcome=correct correct=True" in text
    assert "returns:" in text and not outputs(nb, "error")


@pytest.mark.timeout(300)
def test_serial_vs_parallel(repo_root, tmp_path):
    nb = run_notebook(repo_root / "notebooks" / "serial_vs_parallel.ipynb", tmp_path)
    text = "".join(o.get("text", "") for o in outputs(nb, "stream"))
    assert "6 trajectories run, 0 found complete" in text and "0 run, 6 skipped" in text
    assert len(outputs(nb, "image/png")) == 3  # the three plots are shown
    assert (tmp_path / "runs" / "serial_vs_parallel" / "summary.md").is_file()
