"""difftest.py - the differential random-program campaign (scripts/difftest).

    scripts/difftest [N] [--seed S] [--jobs J] [--out DIR] [options]

generates N random programs (program i from seed S and i alone, so any one
can be regenerated: --only I), runs them in batches of --batch programs per
.td file on every backend (runner.py) at several bindings of their
symbols, compares everything against the float64 reference, prints
progress and a summary, reduces failures (reduce.py) into DIR/found/, and
exits 1 when anything failed (2 for a usage error).
"""
import argparse
import multiprocessing
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen       # noqa: E402
import runner    # noqa: E402


def prog_seed(seed, i):
    return (seed * 1000003 + i * 7919 + 17) % (1 << 62)


def make_program(seed, i, avoid, max_ops):
    g = gen.Gen(prog_seed(seed, i), avoid, max_ops)
    return g.program("p%d" % i)


def read_known(path):
    """Features named in the known-bugs file (first word of each line)."""
    feats = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                feats.append(line.split()[0])
    return feats


# ---- work in a worker process ----

_CFG = None


def _init(cfg):
    global _CFG
    _CFG = cfg
    # one compile cache per worker: no two processes race on one entry
    cfg.workdir = os.path.join(cfg.workdir, "w%d" % os.getpid())
    os.makedirs(cfg.workdir, exist_ok=True)


def _batch(job):
    seed, idxs, avoid, max_ops = job
    cfg = _CFG
    t0 = time.time()
    progs, seeds = [], {}
    for i in idxs:
        p = make_program(seed, i, avoid, max_ops)
        progs.append(p)
        seeds[p.name] = prog_seed(seed, i) ^ 0x5DEECE66D
    bdir = os.path.join(cfg.workdir, "batch%d" % idxs[0])
    try:
        outs = runner.run_batch(cfg, progs, bdir, seeds)
    except Exception as e:   # a tester bug: report it as a finding, go on
        import traceback
        return [dict(i=int(p.name[1:]), failures=[dict(kind="internal", backends=["tester"],
                     detail="%s\n%s" % (e, traceback.format_exc()), binding=None, bindex=None)],
                     runs=0, bindings=0, checked=0, skipped=0, ref_errors=0, secs={}) for p in progs], 0.0
    if not cfg.keep:
        shutil.rmtree(bdir, ignore_errors=True)
    res = []
    for o in outs:
        res.append(dict(i=int(o.prog.name[1:]), runs=o.runs, bindings=o.bindings, checked=o.checked,
                        skipped=o.skipped, ref_errors=o.ref_errors, secs=o.secs,
                        failures=[dict(kind=f.kind, backends=list(f.backends), detail=f.detail,
                                       binding=f.binding, bindex=f.bindex) for f in o.failures]))
    return res, time.time() - t0


def _reduce(job):
    import reduce as red
    seed, i, fail, avoid, max_ops, outdir = job
    cfg = _CFG
    prog = make_program(seed, i, avoid, max_ops)
    try:
        return red.reduce_failure(cfg, prog, prog_seed(seed, i) ^ 0x5DEECE66D, fail, outdir, seed, i)
    except Exception as e:
        import traceback
        return dict(error="%s\n%s" % (e, traceback.format_exc()), outdir=outdir)


# ---- the campaign ----

def parse(argv):
    ap = argparse.ArgumentParser(prog="difftest", description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=200, help="number of programs (default 200)")
    ap.add_argument("--seed", type=int, default=None, help="campaign seed (default: from the clock)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel workers (default 2)")
    ap.add_argument("--out", default="difftest-out", help="output directory (default difftest-out)")
    ap.add_argument("--batch", type=int, default=8, help="programs per .td file (default 8)")
    ap.add_argument("--tdsl", default=None, help="the tdsl binary (default: the build tree's)")
    ap.add_argument("--srcdir", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--only", type=int, action="append", help="run only program I (repeatable)")
    ap.add_argument("--avoid", action="append", default=[], choices=gen.FEATURES,
                    help="leave a generator feature out (repeatable)")
    ap.add_argument("--avoid-known", action="store_true",
                    help="leave out the features tests/difftest/known-bugs lists")
    ap.add_argument("--max-ops", type=int, default=10, help="ops per program, at most (default 10)")
    ap.add_argument("--reduce", type=int, default=12,
                    help="reduce at most this many failures, distinct kinds first (default 12; 0: none)")
    ap.add_argument("--big", type=int, default=1 << 18,
                    help="elements of the largest tensor at the large binding (default 262144; 0: no large binding)")
    ap.add_argument("--specials", type=float, default=0.1,
                    help="share of programs with NaN, inf and extreme values among their inputs (default 0.1)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per command (default 60)")
    ap.add_argument("--backends", default=",".join(runner.BACKENDS),
                    help="comma-separated subset of %s" % ",".join(runner.BACKENDS))
    ap.add_argument("--keep", action="store_true", help="keep every work file")
    ap.add_argument("--show", action="store_true", help="print each program's source and exit")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    return ap.parse_args(argv)


def main(argv):
    a = parse(argv)
    if a.seed is None:
        a.seed = int(time.time()) % 100000
    tdsl = a.tdsl or os.path.join(a.srcdir, "tdsl")
    avoid = list(a.avoid)
    if a.avoid_known:
        known = os.path.join(HERE, "known-bugs")
        feats = read_known(known)
        print("difftest: avoiding the features of known bugs (%s): %s" % (
            os.path.relpath(known, a.srcdir), ", ".join(feats) or "none"))
        avoid += feats
    idxs = a.only or list(range(a.n))
    if a.show:
        for i in idxs:
            print("# program %d of seed %d\n%s" % (i, a.seed, make_program(a.seed, i, avoid, a.max_ops).render()))
        return 0
    if not os.access(tdsl, os.X_OK):
        print("difftest: no tdsl binary at %s (build first, or pass --tdsl)" % tdsl, file=sys.stderr)
        return 2
    out = os.path.abspath(a.out)
    work = os.path.join(out, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    backends = [b for b in a.backends.split(",") if b]
    for b in backends:
        if b not in runner.BACKENDS:
            print("difftest: unknown backend %r" % b, file=sys.stderr)
            return 2
    cfg = runner.Config(os.path.abspath(tdsl), os.path.abspath(a.srcdir), work, a.timeout, backends, a.keep, a.big,
                        a.specials)
    print("difftest: %d programs, seed %d, %d jobs, batches of %d, backends %s, output %s" % (
        len(idxs), a.seed, a.jobs, a.batch, ",".join(backends), out))
    sys.stdout.flush()
    jobs = [(a.seed, idxs[k:k + a.batch], avoid, a.max_ops) for k in range(0, len(idxs), a.batch)]
    t0 = time.time()
    results = []
    stats = dict(runs=0, bindings=0, checked=0, skipped=0, ref_errors=0)
    secs = {}
    with multiprocessing.Pool(a.jobs, _init, (cfg,)) as pool:
        for res, _ in pool.imap_unordered(_batch, jobs):
            results.extend(res)
            for r in res:
                for k in stats:
                    stats[k] += r[k]
                for b, s in r["secs"].items():
                    secs[b] = secs.get(b, 0.0) + s
            if not a.quiet:
                nf = sum(1 for r in results if r["failures"])
                el = time.time() - t0
                print("[%4d/%d] %5.1f programs/s, %d failing" % (len(results), len(idxs), len(results) / el, nf))
                sys.stdout.flush()
        elapsed = time.time() - t0
        failing = sorted((r for r in results if r["failures"]), key=lambda r: r["i"])
        summary(a, results, failing, stats, secs, elapsed)
        reduced = []
        if failing and a.reduce > 0:
            reduced = reduce_all(a, pool, failing, avoid, out)
    write_report(a, out, failing, reduced, stats, elapsed, len(idxs))
    print("difftest: report in %s" % os.path.join(out, "report.txt"))
    return 1 if failing else 0


def summary(a, results, failing, stats, secs, elapsed):
    print("\n==== summary: seed %d, %d programs in %.1f s (%.2f programs/s), %d bindings, %d runs" % (
        a.seed, len(results), elapsed, len(results) / max(elapsed, 1e-9), stats["bindings"], stats["runs"]))
    print("reference: %d output elements compared, %d of them skipped as unreliable; "
          "%d bindings where the semantics require an error" % (stats["checked"], stats["skipped"],
                                                                 stats["ref_errors"]))
    if secs:
        print("time in backends: " + ", ".join("%s %.1f s" % (b, s) for b, s in sorted(secs.items())))
    if not failing:
        print("no failures")
        return
    kinds = {}
    for r in failing:
        for f in r["failures"]:
            k = (f["kind"], ",".join(f["backends"]))
            kinds.setdefault(k, []).append(r["i"])
    print("%d failing programs:" % len(failing))
    for (kind, bs), progs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        ps = sorted(set(progs))
        print("  %-14s %-24s %3d programs (e.g. %s)" % (kind, bs, len(ps), ", ".join(str(p) for p in ps[:6])))


SEVERITY = ("crash", "internal", "check-rejected", "build", "value", "status", "ref-status", "print")


def failure_class(f):
    """A coarse signature of a failure: kind, backends, the gist of its detail."""
    gist = f["detail"]
    for pat in (r"^.*?error: ", r"/\S+", r"-?\d+(\.\d+)?(e[-+]?\d+)?", r"'[^']*'"):
        gist = re.sub(pat, "#", gist, count=1 if pat.startswith("^") else 0)
    return (f["kind"], tuple(f["backends"]), gist[:60])


def pick_to_reduce(failing, limit):
    """Failures to reduce: one of each coarse signature first (the most
    severe kinds first), then others of the same signatures, one per program."""
    seen, first, rest = set(), [], []
    for r in failing:
        fs = sorted(r["failures"], key=lambda f: SEVERITY.index(f["kind"]) if f["kind"] in SEVERITY else 99)
        mine = set()
        for f in fs:
            k = failure_class(f)
            if k in mine:
                continue
            mine.add(k)
            if k not in seen:
                first.append((r["i"], f))
            elif len(mine) == 1:
                rest.append((r["i"], f))
            seen.add(k)
    first.sort(key=lambda t: SEVERITY.index(t[1]["kind"]) if t[1]["kind"] in SEVERITY else 99)
    return (first + rest)[:limit]


def reduce_all(a, pool, failing, avoid, out):
    todo = pick_to_reduce(failing, a.reduce)
    found = os.path.join(out, "found")
    shutil.rmtree(found, ignore_errors=True)
    os.makedirs(found, exist_ok=True)
    print("\n==== reducing %d failures into %s" % (len(todo), found))
    sys.stdout.flush()
    jobs = [(a.seed, i, f, avoid, a.max_ops, os.path.join(found, "p%d-%s-%d" % (i, f["kind"], k)))
            for k, (i, f) in enumerate(todo)]
    reduced = []
    for r in pool.imap(_reduce, jobs):
        reduced.append(r)
        if "error" in r:
            print("reducer failed on %s: %s" % (r["outdir"], r["error"]))
        else:
            print("\n---- %s (%s, %d -> %d nodes, %d tests, %.1f s)\n%s" % (
                os.path.relpath(r["outdir"], out), r["what"], r["nodes_before"], r["nodes_after"],
                r["tests"], r["secs"], r["text"]))
        sys.stdout.flush()
    return reduced


def write_report(a, out, failing, reduced, stats, elapsed, n):
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write("seed %d, %d programs, %.1f s\n" % (a.seed, n, elapsed))
        for r in failing:
            for x in r["failures"]:
                f.write("program %d: %s [%s] at %s: %s\n" % (r["i"], x["kind"], ",".join(x["backends"]),
                                                            x["binding"], x["detail"].split("\n")[0]))
        for r in reduced:
            if "error" not in r:
                f.write("\n---- %s: %s\n%s\n" % (r["outdir"], r["what"], r["text"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
