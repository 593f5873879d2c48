"""test_compile.py - tdsl.compile: build through the tdsl command into a
cache, once per version of the source."""
import os
import shutil

import numpy as np
import pytest

import tdsl

HERE = os.path.dirname(os.path.abspath(__file__))


def test_compile_builds_once_and_again_when_the_source_changes(tool, tmp_path):
    src = str(tmp_path / "models.td")
    shutil.copy(os.path.join(HERE, "models.td"), src)
    cache = str(tmp_path / "cache")
    m = tdsl.compile(src, cache_dir=cache, tdsl=tool)
    assert m.entries[0] == "Tiny.forward"
    assert m.forward(np.zeros((2, 4), np.float32)).shape == (2, 3)
    again = tdsl.compile(src, cache_dir=cache, tdsl=tool)
    assert again.path == m.path          # unchanged: the cached artifact
    with open(src, "a") as f:
        f.write("\nfn plus1(x: f32[K]) -> f32[K] { x + 1.0 }\n")
    changed = tdsl.compile(src, cache_dir=cache, tdsl=tool)
    assert changed.path != m.path and "plus1" in changed.entries
    assert np.array_equal(changed.plus1(np.zeros(3, np.float32)), np.ones(3, np.float32))
    assert tdsl.compile(src, cache_dir=cache, tdsl=tool, seed=3).path != changed.path


def test_compile_reports_tdsls_diagnostics(tool, tmp_path):
    bad = tmp_path / "bad.td"
    bad.write_text("fn f(x: f32[N]) -> f32[N] { x + y }\n")
    with pytest.raises(tdsl.Error) as e:
        tdsl.compile(str(bad), cache_dir=str(tmp_path / "cache"), tdsl=tool)
    assert str(e.value).startswith(f"tdsl build {bad} failed:")
    assert "y" in str(e.value)
    with pytest.raises(tdsl.Error, match="no such file"):
        tdsl.compile(str(tmp_path / "none.td"), tdsl=tool)
