"""_compile.py - tdsl.compile: a .td file built and loaded in one step.

The build is the `tdsl` command's (`tdsl build FILE -o DIR`, through
subprocess): this package stays pure Python and builds exactly what the
command line builds.  The command is $TDSL when set, else `tdsl` on PATH,
else the one of the source tree this package lies in (python/../tdsl).

Artifacts are kept in a cache directory (cache_dir, else $TDSL_PY_CACHE,
else $XDG_CACHE_HOME/tdsl/python, else ~/.cache/tdsl/python), one
directory per key: a hash of the tdsl command (its path, size and
modification time), the build options, the source's path and bytes, and
the bytes of each .td file its imports name that exists next to it, in
$TDSL_PATH or in the stdlib directory beside the command.  An unchanged
model is loaded without a build; a changed one is built into a new
directory.
"""
import hashlib
import os
import re
import shutil
import subprocess

from ._model import Error, load

_IMPORT = re.compile(rb"^\s*import\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def find_tdsl():
    """The tdsl command compile runs: $TDSL, else tdsl on PATH, else the
    source tree's build (python/../tdsl); None when there is none."""
    env = os.environ.get("TDSL")
    if env:
        return env
    on_path = shutil.which("tdsl")
    if on_path:
        return on_path
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tree = os.path.join(here, "tdsl")
    return tree if os.path.isfile(tree) and os.access(tree, os.X_OK) else None


def _cache_root(cache_dir):
    if cache_dir:
        return os.fspath(cache_dir)
    if os.environ.get("TDSL_PY_CACHE"):
        return os.environ["TDSL_PY_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tdsl", "python")


def _module_dirs(source, tool):
    dirs = [os.path.dirname(os.path.abspath(source))]
    dirs += [d for d in os.environ.get("TDSL_PATH", "").split(":") if d]
    dirs.append(os.path.join(os.path.dirname(os.path.abspath(tool)), "stdlib"))
    return dirs


def _key(source, tool, options):
    """The cache key of source built by tool with options (see above)."""
    h = hashlib.sha256()
    st = os.stat(tool)
    h.update(repr((os.path.abspath(tool), st.st_size, st.st_mtime_ns, options)).encode())
    seen, todo = set(), [os.path.abspath(source)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(path, "rb") as f:
            text = f.read()
        h.update(path.encode() + b"\0" + text + b"\0")
        for m in _IMPORT.finditer(text):
            for d in _module_dirs(path, tool):
                found = os.path.join(d, m.group(1).decode() + ".td")
                if os.path.isfile(found):
                    todo.append(os.path.abspath(found))
                    break
    return h.hexdigest()[:24]


def compile(source, *, name=None, seed=None, embed_weights=False, march=None, cache_dir=None, tdsl=None):
    """Builds the .td file source with `tdsl build` (into the cache, only
    when it changed) and loads it (tdsl.load).  name, seed, embed_weights
    and march are tdsl build's --name, --seed, --embed-weights and --march;
    tdsl the command to run (default: find_tdsl())."""
    source = os.fspath(source)
    if not os.path.isfile(source):
        raise Error(f"{source}: no such file")
    tool = tdsl or find_tdsl()
    if not tool:
        raise Error("cannot find the tdsl command: set TDSL to its path, or put it on PATH")
    args = []
    if name:
        args += ["--name", name]
    if seed is not None:
        args += ["--seed", str(int(seed))]
    if embed_weights:
        args.append("--embed-weights")
    if march:
        args += ["--march", march]
    try:
        key = _key(source, tool, args)
    except OSError as e:
        raise Error(f"cannot read {e.filename}: {e.strerror}") from None
    out = os.path.join(_cache_root(cache_dir), key)
    stem = name or re.sub(r"\W", "_", os.path.basename(source).rsplit(".", 1)[0])
    built = os.path.join(out, stem + ".so")
    if not os.path.isfile(built):
        os.makedirs(out, exist_ok=True)
        try:
            r = subprocess.run([tool, "build", source, "-o", out] + args, capture_output=True, text=True)
        except OSError as e:
            raise Error(f"cannot run {tool}: {e.strerror}") from None
        if r.returncode != 0:
            raise Error(f"tdsl build {source} failed:\n{(r.stderr or r.stdout).rstrip()}")
        if not os.path.isfile(built):
            found = [f for f in os.listdir(out) if f.endswith(".so")]
            if len(found) != 1:
                raise Error(f"tdsl build {source} wrote no library into {out}")
            built = os.path.join(out, found[0])
    return load(built)
