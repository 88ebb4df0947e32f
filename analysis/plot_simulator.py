#!/usr/bin/env python3
"""The paper's Figures 2, 3 and 4 (Leviathan et al. 2023) from `speclab simulate`.

    python3 analysis/plot_simulator.py OUT_DIR [--speclab PATH] [--c C] [--c-hat CH]

Calls `speclab simulate --figure N --format csv` for N = 2, 3, 4 and writes into OUT_DIR:

  figure2.png/.svg  expected tokens per iteration, E = (1 - alpha^(gamma+1)) / (1 - alpha),
                    vs alpha, one curve per gamma (Eq. 1)
  figure3.png/.svg  the optimal gamma vs alpha for several c (left) and the speedup it gives,
                    with the oracle-gamma bound of section 3.5 dashed (right)
  figure4.png/.svg  walltime speedup (Theorem 3.8, left) and arithmetic operations factor
                    (Theorem 3.11, right) vs alpha, one curve per gamma
  figureN.csv       the data each figure was drawn from

--c / --c-hat are passed to Figure 4 (the simulator's defaults otherwise: c = c_hat = 0, where
the speedup panel coincides with Figure 2). The parameter sets are the simulator's, not the
paper's (the paper does not print them). speclab is found as --speclab, else $SPECLAB_BIN,
else build/bin/speclab under the repository, else `speclab` on PATH.
Exit codes: 0 written; 1 matplotlib missing or speclab failed; 2 bad arguments.
"""

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys

PROG = "plot_simulator"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg, code):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


def find_speclab(given):
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            die("--speclab %s: not an executable file" % given, 2)
        return given
    env = os.environ.get("SPECLAB_BIN")
    if env and os.path.isfile(env) and os.access(env, os.X_OK):
        return env
    candidate = os.path.join(REPO, "build", "bin", "speclab")
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    on_path = shutil.which("speclab")
    if on_path:
        return on_path
    die("speclab not found: build it (cmake --build build) or pass --speclab PATH", 2)


def simulate(speclab, figure, extra, out_dir):
    cmd = [speclab, "simulate", "--figure", str(figure), "--format", "csv"] + extra
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        die("%s: cannot run: %s" % (speclab, e), 1)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        die("`%s` failed (exit %d): %s" % (" ".join(cmd), p.returncode, err),
            2 if p.returncode == 2 else 1)
    with open(os.path.join(out_dir, "figure%d.csv" % figure), "w") as f:
        f.write(p.stdout)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    if not rows:
        die("`%s` printed no rows" % " ".join(cmd), 1)
    out = []
    for r in rows:
        try:
            out.append({k: float(v) for k, v in r.items()})
        except (TypeError, ValueError):
            die("`%s`: unexpected CSV row %r" % (" ".join(cmd), r), 1)
    return out


def by(rows, key):
    groups = {}
    for r in rows:
        groups.setdefault(r[key], []).append(r)
    for g in groups.values():
        g.sort(key=lambda r: r["alpha"])
    return sorted(groups.items())


def save(plt, fig, out_dir, name):
    for ext in ("png", "svg"):
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(os.path.join(out_dir, "%s.%s" % (name, ext)), bbox_inches="tight",
                    metadata=meta, dpi=110 if ext == "png" else None)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--speclab", help="path to the speclab binary")
    ap.add_argument("--c", type=float, help="Figure 4: draft/target cost ratio c")
    ap.add_argument("--c-hat", type=float, help="Figure 4: draft/target operations ratio c_hat")
    try:
        args = ap.parse_args()
    except SystemExit as e:
        sys.exit(2 if e.code else 0)
    speclab = find_speclab(args.speclab)
    try:
        import matplotlib
    except ImportError:
        system = "/usr/bin/python3"  # Debian's python3-matplotlib (.ci/install); rerun once there
        if (not os.environ.get("SPECLAB_PLOT_REEXEC") and os.access(system, os.X_OK)
                and os.path.realpath(sys.executable) != os.path.realpath(system)):
            os.environ["SPECLAB_PLOT_REEXEC"] = "1"
            os.execv(system, [system, os.path.abspath(sys.argv[0])] + sys.argv[1:])
        die("python3 with matplotlib is needed (Debian: apt-get install python3-matplotlib)", 1)
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "speclab"
    import matplotlib.pyplot as plt

    try:
        os.makedirs(args.out_dir, exist_ok=True)
    except OSError as e:
        die("%s: cannot create directory: %s" % (args.out_dir, e.strerror or e), 2)

    # Figure 2: expected tokens per iteration vs alpha.
    rows = simulate(speclab, 2, [], args.out_dir)
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for g, grp in by(rows, "gamma"):
        ax.plot([r["alpha"] for r in grp], [r["expected_tokens"] for r in grp],
                label="gamma=%d" % g)
    ax.set_xlabel("alpha")
    ax.set_ylabel("expected tokens per iteration")
    ax.set_title("Figure 2: E[tokens] = (1 - alpha^(gamma+1)) / (1 - alpha)", fontsize=10)
    ax.set_xlim(0, 1)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save(plt, fig, args.out_dir, "figure2")

    # Figure 3: optimal gamma (and the speedup it gives) vs alpha, per c.
    rows = simulate(speclab, 3, [], args.out_dir)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.2))
    for i, (c, grp) in enumerate(by(rows, "c")):
        color = "C%d" % (i % 10)
        al = [r["alpha"] for r in grp]
        ax1.step(al, [r["optimal_gamma"] for r in grp], where="mid", color=color,
                 label="c=%g" % c)
        capped = [(r["alpha"], r["optimal_gamma"]) for r in grp if r["capped"]]
        if capped:
            ax1.plot([p[0] for p in capped], [p[1] for p in capped], "x", color=color, ms=4)
        ax2.plot(al, [r["speedup"] for r in grp], color=color, label="c=%g, optimal gamma" % c)
        ax2.plot(al, [r["oracle_speedup"] for r in grp], "--", color=color, lw=0.9)
    ax1.set_yscale("log")
    ax1.set_xlabel("alpha")
    ax1.set_ylabel("optimal gamma (Theorem 3.8)")
    ax1.set_title("Figure 3: optimal gamma vs alpha (x: capped at gamma-max)", fontsize=10)
    ax1.legend(fontsize=8)
    ax1.grid(alpha=0.3, which="both")
    ax2.set_yscale("log")
    ax2.set_xlabel("alpha")
    ax2.set_ylabel("speedup")
    ax2.set_title("speedup at the optimal gamma (dashed: oracle gamma, section 3.5)",
                  fontsize=10)
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3, which="both")
    fig.tight_layout()
    save(plt, fig, args.out_dir, "figure3")

    # Figure 4: speedup and operations vs alpha, per gamma.
    extra = []
    if args.c is not None:
        extra += ["--c", repr(args.c)]
    if args.c_hat is not None:
        extra += ["--c-hat", repr(args.c_hat)]
    rows = simulate(speclab, 4, extra, args.out_dir)
    c, c_hat = rows[0]["c"], rows[0]["c_hat"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.2))
    for g, grp in by(rows, "gamma"):
        al = [r["alpha"] for r in grp]
        ax1.plot(al, [r["speedup"] for r in grp], label="gamma=%d" % g)
        ax2.plot(al, [r["operations"] for r in grp], label="gamma=%d" % g)
    ax1.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax1.set_xlabel("alpha")
    ax1.set_ylabel("walltime speedup (Theorem 3.8)")
    ax1.set_title("Figure 4: speedup, c=%g" % c, fontsize=10)
    ax2.set_xlabel("alpha")
    ax2.set_ylabel("arithmetic operations factor (Theorem 3.11)")
    ax2.set_title("Figure 4: operations, c_hat=%g" % c_hat, fontsize=10)
    for ax in (ax1, ax2):
        ax.set_xlim(0, 1)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save(plt, fig, args.out_dir, "figure4")
    sys.stderr.write("%s: figures 2, 3, 4 (PNG + SVG + CSV) in %s (from %s)\n"
                     % (PROG, args.out_dir, speclab))
    return 0


if __name__ == "__main__":
    sys.exit(main())
