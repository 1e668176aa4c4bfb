"""Every example script and notebook runs offline and exits cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _run_offline(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python script in a fresh process with no OpenAI settings (scripted models only); a
    deprecated spelling the script itself uses (``Memory(results=...)``) is an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:__main__", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    result = _run_offline(script, tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert result.stdout.strip()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook: Path, tmp_path: Path) -> None:
    # Notebooks are executed cell by cell as one script: code cells only, in order.
    cells = json.loads(notebook.read_text())["cells"]
    source = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    script = tmp_path / (notebook.stem + ".py")
    script.write_text(source)
    result = _run_offline(script, tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
