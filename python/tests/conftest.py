"""Each test tunes in a directory of its own: its store, caches and spec directories."""

import pytest


@pytest.fixture(autouse=True)
def own_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NDTUNE_PYTHON_DIR", str(tmp_path / "specs"))
    return tmp_path
