"""The trainer's layers point down: import-linter checks the contract in pyproject.toml
(`[tool.importlinter]`), on this checkout's sources."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

TRAINER = Path(__file__).resolve().parents[1]
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(src: Path) -> subprocess.CompletedProcess:
    # grimp imports nothing but finds the package on the path: put these sources first, so an
    # installed copy of attune_trainer elsewhere is not the one checked.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", LINT, str(TRAINER / "pyproject.toml"), "--no-cache"],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_contract_is_kept():
    result = _lint(TRAINER / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    shutil.copytree(TRAINER / "src" / "attune_trainer", tmp_path / "attune_trainer")
    store = tmp_path / "attune_trainer" / "state" / "store.py"
    store.write_text(store.read_text() + "\nfrom attune_trainer.service import server  # noqa: E402\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    assert "attune_trainer.state.store -> attune_trainer.service.server" in result.stdout
