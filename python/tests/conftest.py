"""conftest.py - what the Python package's tests share: the package of this
tree (importable without installing it), the tdsl command (tdsl.find_tdsl:
$TDSL, PATH or the tree's build), and models.td built once per session."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))           # python/: the package of this tree
SRCDIR = os.environ.get("TDSL_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests"))   # tests/safetensors_io.py

import tdsl  # noqa: E402


@pytest.fixture(scope="session")
def tool():
    t = tdsl.find_tdsl()
    if not t:
        pytest.skip("no tdsl command (set TDSL to the built tdsl)")
    return t


@pytest.fixture(scope="session")
def built(tool, tmp_path_factory):
    """models.td built into a directory of its own: the path of models.so."""
    out = tmp_path_factory.mktemp("built")
    r = subprocess.run([tool, "build", os.path.join(HERE, "models.td"), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(out / "models.so")


@pytest.fixture
def model(built):
    """A fresh model (the parameters its recipes make) of models.so."""
    with tdsl.load(built) as m:
        yield m
