#!/usr/bin/env python3
"""Plots and an index page for one speclab results directory.

    python3 analysis/plot_results.py RESULTS_DIR

Reads RESULTS_DIR/results.jsonl (one flat JSON row per cell, as `speclab run` writes it) and
nothing else except RESULTS_DIR/tables.md, which is copied into the index when present.
Writes PNG and SVG under RESULTS_DIR/plots/ and RESULTS_DIR/index.md:

  speedup_vs_gamma      measured speedup (bootstrap interval error bars) and the Theorem 3.8
                        and refined predictions, per drafter (rows) and temperature (columns)
  predicted_vs_measured both predictions against the measurement, with the y = x line
  acceptance_by_position  conditional acceptance at draft position i, per drafter/temperature
  time_breakdown        draft / verify / sample seconds per round, stacked, one bar per cell
  predicted_grid        cost-only rows: predicted speedup vs gamma for several alphas
                        (Theorem 3.8 dashed, refined solid)
  target_tk_ratio       the target's verification cost curve T(k)/T(1)

Missing fields are skipped (rows from runs without a baseline have no speedup; cost-only rows
have no acceptance). Exit codes: 0 written, or nothing to plot (said on stderr); 1 matplotlib
missing (a python3 without it reruns the script once under /usr/bin/python3, where Debian's
python3-matplotlib lives); 2 bad input (missing directory or results file, a malformed row),
one line on stderr naming the file and line. As in speclab's own reader, text after the last newline (a row torn
by a killed run) is ignored.
"""

import json
import math
import os
import sys

PROG = "plot_results"
PLOT_NAMES = [
    "speedup_vs_gamma",
    "predicted_vs_measured",
    "acceptance_by_position",
    "time_breakdown",
    "predicted_grid",
    "target_tk_ratio",
]
# Cell parameters other than drafter / temperature / gamma; those that vary within a results
# file split a panel into separate series.
SERIES_KEYS = [
    "experiment",
    "draft_temperature",
    "top_k",
    "top_p",
    "lenience",
    "gamma_policy",
    "p_min",
    "synthetic_acceptance",  # absent (None) when off
]


class BadInput(Exception):
    pass


def die(msg, code):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# Reading


def read_rows(results_dir):
    if not os.path.isdir(results_dir):
        raise BadInput("%s: not a directory (expected a results directory)" % results_dir)
    path = os.path.join(results_dir, "results.jsonl")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput("%s: cannot open results file: %s" % (path, e.strerror or e))
    complete = data[: data.rfind(b"\n") + 1]  # a torn last line (no newline) is ignored
    rows = []
    for lineno, raw in enumerate(complete.split(b"\n")[:-1] if complete else [], start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise BadInput("%s:%d: not a valid JSON row (%s)" % (path, lineno, str(e).splitlines()[0]))
        if not isinstance(row, dict):
            raise BadInput("%s:%d: expected a JSON object, got %s" % (path, lineno, type(row).__name__))
        rows.append(row)
    torn = len(data) - len(complete)
    if data[len(complete):].strip():
        sys.stderr.write("%s: %s: ignoring %d bytes after the last newline (a torn row)\n"
                         % (PROG, path, torn))
    return rows


def num(row, key):
    """row[key] as a finite float, or None."""
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def num_list(row, key):
    """row[key] as a list of floats (None for non-numbers), or None when absent / not a list."""
    v = row.get(key)
    if not isinstance(v, list):
        return None
    out = []
    for x in v:
        if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
            out.append(float(x))
        else:
            out.append(None)
    return out


def fmt_value(v):
    if isinstance(v, float):
        return "%g" % v
    if v is None:  # an optional cell parameter that is off (synthetic_acceptance)
        return "off"
    if isinstance(v, list):
        return "/".join(fmt_value(x) for x in v)
    return str(v)


def drafter_of(row):
    d = row.get("drafter")
    if d is None:
        d = row.get("draft_name", row.get("drafter_spec", "?"))
    return str(d)


def temp_of(row):
    t = num(row, "temperature")
    return t if t is not None else float("nan")


def varying_keys(rows):
    keys = []
    for k in SERIES_KEYS:
        vals = {json.dumps(r.get(k), sort_keys=True) for r in rows}
        if len(vals) > 1:
            keys.append(k)
    return keys


def panel_varying_keys(rows):
    """SERIES_KEYS that vary among rows sharing a drafter and temperature (what tells a
    panel's series apart; a draft temperature that follows the temperature does not)."""
    groups = {}
    for r in rows:
        groups.setdefault((drafter_of(r), json.dumps(r.get("temperature"))), []).append(r)
    keys = set()
    for grp in groups.values():
        keys.update(varying_keys(grp))
    return [k for k in SERIES_KEYS if k in keys]


def series_label(row, keys):
    return ", ".join("%s=%s" % (k, fmt_value(row.get(k))) for k in keys)


def panel_grid(rows):
    """Sorted drafters and temperatures that occur in rows."""
    drafters = sorted({drafter_of(r) for r in rows})
    temps = sorted({temp_of(r) for r in rows}, key=lambda t: (math.isnan(t), t))
    return drafters, temps


def is_cost_only(row):
    return isinstance(row.get("predicted_grid"), list)


# ---------------------------------------------------------------------------------------------
# Plotting


SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's python3-matplotlib (.ci/install) lives


def reexec_with_system_python():
    """`python3` on PATH may be another interpreter (pyenv, a venv) without matplotlib: rerun
    this script once under the system interpreter, which .ci/install gives matplotlib."""
    if os.environ.get("SPECLAB_PLOT_REEXEC") or not os.access(SYSTEM_PYTHON, os.X_OK):
        return
    if os.path.realpath(sys.executable) == os.path.realpath(SYSTEM_PYTHON):
        return
    os.environ["SPECLAB_PLOT_REEXEC"] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])] + sys.argv[1:])


def setup_matplotlib():
    try:
        import matplotlib
    except ImportError:
        reexec_with_system_python()
        die("python3 with matplotlib is needed (Debian: apt-get install python3-matplotlib)", 1)
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "speclab"  # stable SVG ids from run to run
    matplotlib.rcParams["figure.dpi"] = 100
    import matplotlib.pyplot as plt

    return plt


def save(plt, fig, plots_dir, name, written):
    for ext in ("png", "svg"):
        path = os.path.join(plots_dir, "%s.%s" % (name, ext))
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(path, bbox_inches="tight", metadata=meta, dpi=110 if ext == "png" else None)
    plt.close(fig)
    written.append(name)


def make_panels(plt, n_rows, n_cols, w=4.2, h=3.2):
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False)
    return fig, axes


def plot_speedup_vs_gamma(plt, rows, plots_dir, written, notes):
    rows = [r for r in rows if num(r, "speedup") is not None and num(r, "gamma") is not None]
    if not rows:
        notes.append("speedup vs gamma: no measured speedups (runs without `measure.baseline` "
                     "have none)")
        return
    drafters, temps = panel_grid(rows)
    keys = panel_varying_keys(rows)
    fig, axes = make_panels(plt, len(drafters), len(temps))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, d in enumerate(drafters):
        for j, t in enumerate(temps):
            ax = axes[i][j]
            sel = [r for r in rows if drafter_of(r) == d and
                   (temp_of(r) == t or (math.isnan(t) and math.isnan(temp_of(r))))]
            groups = {}
            for r in sel:
                groups.setdefault(series_label(r, keys), []).append(r)
            for si, (label, grp) in enumerate(sorted(groups.items())):
                grp.sort(key=lambda r: num(r, "gamma"))
                color = colors[si % len(colors)]
                g = [num(r, "gamma") for r in grp]
                s = [num(r, "speedup") for r in grp]
                lo = [num(r, "speedup_ci_lo") for r in grp]
                hi = [num(r, "speedup_ci_hi") for r in grp]
                yerr = None
                if all(x is not None for x in lo + hi):
                    yerr = [[max(0.0, sv - l) for sv, l in zip(s, lo)],
                            [max(0.0, h - sv) for sv, h in zip(s, hi)]]
                prefix = (label + ": ") if label else ""
                ax.errorbar(g, s, yerr=yerr, fmt="o", color=color, capsize=3, ms=4,
                            label=prefix + "measured")
                for key, style, name in (("predicted_speedup_thm38", "--", "Thm 3.8"),
                                         ("predicted_speedup_refined", "-", "refined")):
                    pts = [(num(r, "gamma"), num(r, key)) for r in grp if num(r, key) is not None]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                                alpha=0.8, lw=1.3, label=prefix + name)
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_title("%s, T=%s" % (d, fmt_value(t)), fontsize=10)
            ax.set_xlabel("gamma")
            ax.set_ylabel("speedup")
            ax.xaxis.get_major_locator().set_params(integer=True)
            if sel:
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("Speedup vs gamma: measured (95% bootstrap CI) and predicted", fontsize=11)
    fig.tight_layout()
    save(plt, fig, plots_dir, "speedup_vs_gamma", written)


def plot_predicted_vs_measured(plt, rows, plots_dir, written, notes):
    pts = {"thm38": [], "refined": []}
    for r in rows:
        s = num(r, "speedup")
        if s is None:
            continue
        for k in pts:
            p = num(r, "predicted_speedup_" + k)
            if p is not None:
                pts[k].append((s, p))
    if not pts["thm38"] and not pts["refined"]:
        notes.append("predicted vs measured: no rows with both a measured and a predicted speedup")
        return
    fig, ax = plt.subplots(figsize=(5.2, 5))
    allv = []
    for k, marker, name in (("thm38", "x", "Theorem 3.8"), ("refined", "o", "refined")):
        if not pts[k]:
            continue
        xs, ys = [p[0] for p in pts[k]], [p[1] for p in pts[k]]
        allv += xs + ys
        mape = sum(abs(y / x - 1) for x, y in pts[k] if x > 0) / len(pts[k]) * 100
        ax.scatter(xs, ys, marker=marker, s=28, alpha=0.8,
                   facecolors="none" if marker == "o" else None,
                   edgecolors="C1" if marker == "o" else None,
                   color="C0" if marker == "x" else None,
                   label="%s (mean |error| %.1f%%, n=%d)" % (name, mape, len(xs)))
    lo, hi = min(allv), max(allv)
    pad = 0.05 * (hi - lo if hi > lo else 1.0)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="grey", lw=1, ls="--", label="y = x")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("measured speedup")
    ax.set_ylabel("predicted speedup")
    ax.set_title("Predicted vs measured speedup", fontsize=11)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(plt, fig, plots_dir, "predicted_vs_measured", written)


def plot_acceptance(plt, rows, plots_dir, written, notes):
    rows = [r for r in rows if num_list(r, "acceptance_by_position")]
    if not rows:
        notes.append("acceptance by position: no rows with `acceptance_by_position`")
        return
    drafters, temps = panel_grid(rows)
    keys = panel_varying_keys(rows)
    fig, axes = make_panels(plt, len(drafters), len(temps))
    for i, d in enumerate(drafters):
        for j, t in enumerate(temps):
            ax = axes[i][j]
            sel = [r for r in rows if drafter_of(r) == d and
                   (temp_of(r) == t or (math.isnan(t) and math.isnan(temp_of(r))))]
            sel.sort(key=lambda r: (series_label(r, keys), num(r, "gamma") or 0))
            for r in sel:
                a = num_list(r, "acceptance_by_position")
                tested = num_list(r, "tested_by_position")
                xs, ys = [], []
                for pos, v in enumerate(a, start=1):
                    # Positions never tested carry 0 in the row; they are not data.
                    if v is None or (tested and pos <= len(tested) and not tested[pos - 1]):
                        continue
                    xs.append(pos)
                    ys.append(v)
                if not xs:
                    continue
                label = "gamma=%s" % fmt_value(r.get("gamma"))
                extra = series_label(r, keys)
                ax.plot(xs, ys, "o-", ms=3, lw=1.2, label=label + (", " + extra if extra else ""))
            alpha = [num(r, "alpha_empirical") for r in sel if num(r, "alpha_empirical") is not None]
            ax.set_ylim(-0.02, 1.02)
            ax.set_title("%s, T=%s" % (d, fmt_value(t)), fontsize=10)
            ax.set_xlabel("draft position i")
            ax.set_ylabel("P(accept i | accepted < i)")
            if alpha:
                ax.axhline(sum(alpha) / len(alpha), color="grey", lw=0.8, ls=":")
            if ax.lines:
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
            ax.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle("Conditional acceptance by draft position (dotted: mean empirical alpha)",
                 fontsize=11)
    fig.tight_layout()
    save(plt, fig, plots_dir, "acceptance_by_position", written)


def cell_label(r, keys):
    s = "%s g=%s T=%s" % (drafter_of(r), fmt_value(r.get("gamma")), fmt_value(r.get("temperature")))
    extra = series_label(r, keys)
    return s + (" " + extra if extra else "")


def plot_time_breakdown(plt, rows, plots_dir, written, notes):
    parts = ("draft_s", "verify_s", "sample_s")
    sel = [r for r in rows if num(r, "rounds") and all(num(r, p) is not None for p in parts)]
    if not sel:
        notes.append("time breakdown: no rows with rounds and draft_s / verify_s / sample_s")
        return
    keys = panel_varying_keys(sel)
    sel.sort(key=lambda r: (drafter_of(r), temp_of(r), series_label(r, keys), num(r, "gamma") or 0))
    labels = [cell_label(r, keys) for r in sel]
    n = len(sel)
    fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.28 * n + 1.2)))
    left = [0.0] * n
    ypos = list(range(n))
    for p, color in zip(parts, ("C0", "C1", "C2")):
        w = [num(r, p) / num(r, "rounds") * 1e3 for r in sel]
        ax.barh(ypos, w, left=left, color=color, label=p.replace("_s", ""), height=0.75)
        left = [a + b for a, b in zip(left, w)]
    ax.set_yticks(ypos)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds per round")
    ax.set_title("Time per speculative round: draft / verify / sample", fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save(plt, fig, plots_dir, "time_breakdown", written)


def pick_alphas(alphas, want=(0.5, 0.6, 0.7, 0.8, 0.9)):
    chosen = [a for a in alphas if any(abs(a - w) < 1e-9 for w in want)]
    if len(chosen) >= 2:
        return chosen
    if len(alphas) <= 5:
        return alphas
    step = (len(alphas) - 1) / 4.0
    return sorted({alphas[int(round(i * step))] for i in range(5)})


def plot_predicted_grid(plt, rows, plots_dir, written, notes):
    cost = [r for r in rows if is_cost_only(r)]
    if not cost:
        return  # no cost-only rows: nothing to say
    # One panel per drafter (and varying parameters); gamma of the cell does not change the grid.
    keys = panel_varying_keys(cost)
    panels = {}
    for r in cost:
        panels.setdefault((drafter_of(r), series_label(r, keys)), r)
    items = sorted(panels.items())
    n = len(items)
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = make_panels(plt, nrows, cols, w=4.6, h=3.5)
    for idx, ((d, extra), r) in enumerate(items):
        ax = axes[idx // cols][idx % cols]
        grid = [e for e in r["predicted_grid"] if isinstance(e, dict)]
        alphas = sorted({num(e, "alpha") for e in grid if num(e, "alpha") is not None})
        for ci, a in enumerate(pick_alphas(alphas)):
            pts = sorted((num(e, "gamma"), num(e, "thm38"), num(e, "refined")) for e in grid
                         if num(e, "alpha") == a and num(e, "gamma") is not None)
            color = "C%d" % (ci % 10)
            g = [p[0] for p in pts if p[1] is not None]
            ax.plot(g, [p[1] for p in pts if p[1] is not None], "--", color=color, lw=1.2)
            g = [p[0] for p in pts if p[2] is not None]
            ax.plot(g, [p[2] for p in pts if p[2] is not None], "-", color=color, lw=1.5,
                    label="alpha=%g" % a)
        c = num(r, "c_measured")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_title("%s%s%s" % (d, (" " + extra) if extra else "",
                                 (", c=%.3g" % c) if c is not None else ""), fontsize=10)
        ax.set_xlabel("gamma")
        ax.set_ylabel("predicted speedup")
        ax.xaxis.get_major_locator().set_params(integer=True)
        if ax.lines:
            ax.legend(fontsize=7, title="solid refined, dashed Thm 3.8", title_fontsize=7)
    for idx in range(n, nrows * cols):
        axes[idx // cols][idx % cols].set_visible(False)
    fig.suptitle("Predicted speedup from measured costs (Theorem 3.8 assumes T(k) = T(1))",
                 fontsize=11)
    fig.tight_layout()
    save(plt, fig, plots_dir, "predicted_grid", written)


def plot_tk_ratio(plt, rows, plots_dir, written, notes):
    curves = {}
    for r in rows:
        ratio = num_list(r, "target_tk_ratio")
        if not ratio or all(v is None for v in ratio):
            continue
        target = r.get("target_spec") or r.get("target_path") or "target"
        label = "%s (context %s)" % (target, fmt_value(r.get("cost_context_len", "?")))
        if r.get("machine_cpu_model") and len({x.get("machine_cpu_model") for x in rows}) > 1:
            label += ", " + str(r["machine_cpu_model"])
        curves.setdefault(label, ratio)  # the curve is per run, repeated in every row
    if not curves:
        notes.append("T(k)/T(1): no rows with `target_tk_ratio`")
        return
    fig, ax = plt.subplots(figsize=(5.5, 4))
    kmax = 1
    for label, ratio in sorted(curves.items()):
        ks = [k for k, v in enumerate(ratio, start=1) if v is not None]
        kmax = max(kmax, max(ks))
        ax.plot(ks, [v for v in ratio if v is not None], "o-", ms=4, label=label)
    ax.plot([1, kmax], [1, 1], color="grey", ls="--", lw=1, label="Thm 3.8 assumption T(k)=T(1)")
    ax.set_xlabel("k (tokens verified in one target call)")
    ax.set_ylabel("T(k) / T(1)")
    ax.set_title("Target verification cost curve", fontsize=11)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(plt, fig, plots_dir, "target_tk_ratio", written)


# ---------------------------------------------------------------------------------------------
# Index page

TITLES = {
    "speedup_vs_gamma": "Speedup vs gamma",
    "predicted_vs_measured": "Predicted vs measured speedup",
    "acceptance_by_position": "Acceptance by draft position",
    "time_breakdown": "Time breakdown per round",
    "predicted_grid": "Predicted speedup vs gamma (cost-only rows)",
    "target_tk_ratio": "Target verification cost T(k)/T(1)",
}

CAPTIONS = {
    "speedup_vs_gamma": "Speedup vs gamma per drafter (rows) and temperature (columns): measured "
                        "points with bootstrap interval error bars; Theorem 3.8 (dashed) and "
                        "refined (solid) predictions.",
    "predicted_vs_measured": "Predicted vs measured speedup, both predictions, with y = x.",
    "acceptance_by_position": "Conditional acceptance at each draft position, one line per gamma.",
    "time_breakdown": "Draft, verify and sample time per speculative round, one bar per cell.",
    "predicted_grid": "Cost-only rows: predicted speedup vs gamma for several alphas from the "
                      "measured c and T(k) (refined solid, Theorem 3.8 dashed).",
    "target_tk_ratio": "The target's verification cost T(k)/T(1) as measured in the run.",
}


def write_index(results_dir, rows, written, notes):
    names = sorted({str(r.get("experiment")) for r in rows if r.get("experiment") is not None})
    title = ", ".join(names) if names else os.path.basename(os.path.abspath(results_dir))
    out = ["# Results: %s" % title, ""]
    questions = sorted({str(r["question"]) for r in rows if r.get("question")})
    for q in questions:
        out += ["> %s" % q, ""]
    commits = sorted({str(r.get("git_commit")) for r in rows if r.get("git_commit")})
    out.append("%d result rows from `results.jsonl`%s." % (
        len(rows), ("; commit " + ", ".join("`%s`" % c[:12] for c in commits)) if commits else ""))
    out.append("")
    out += ["## Plots", ""]
    if not written:
        out += ["No plots: nothing in the results to plot.", ""]
    for name in written:
        out += ["### %s" % TITLES.get(name, name), "", CAPTIONS.get(name, ""), "",
                "![%s](plots/%s.png)" % (name, name), "",
                "[SVG](plots/%s.svg)" % name, ""]
    if notes:
        out += ["Not plotted:", ""] + ["- %s" % n for n in notes] + [""]
    tables = os.path.join(results_dir, "tables.md")
    if os.path.isfile(tables):
        with open(tables, encoding="utf-8", errors="replace") as f:
            text = f.read().strip("\n")
        out += ["## Tables", "", "(from [tables.md](tables.md))", ""]
        # Demote the tables' own headings below this page's section heading.
        for line in text.split("\n"):
            out.append("##" + line if line.startswith("#") else line)
        out.append("")
    path = os.path.join(results_dir, "index.md")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------------


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        if len(argv) == 2:
            print(__doc__)
            return 0
        die("usage: plot_results.py RESULTS_DIR (expected one argument, got %d)" % (len(argv) - 1), 2)
    results_dir = argv[1]
    try:
        rows = read_rows(results_dir)
    except BadInput as e:
        die(str(e), 2)
    if not rows:
        sys.stderr.write("%s: %s: no result rows; nothing to plot\n"
                         % (PROG, os.path.join(results_dir, "results.jsonl")))
        return 0
    plt = setup_matplotlib()
    plots_dir = os.path.join(results_dir, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    for name in PLOT_NAMES:  # plots from an earlier run that this one does not make
        for ext in ("png", "svg"):
            p = os.path.join(plots_dir, "%s.%s" % (name, ext))
            if os.path.exists(p):
                os.remove(p)
    written, notes = [], []
    measured = [r for r in rows if not is_cost_only(r)]
    plot_speedup_vs_gamma(plt, measured, plots_dir, written, notes)
    plot_predicted_vs_measured(plt, measured, plots_dir, written, notes)
    plot_acceptance(plt, measured, plots_dir, written, notes)
    plot_time_breakdown(plt, measured, plots_dir, written, notes)
    plot_predicted_grid(plt, rows, plots_dir, written, notes)
    plot_tk_ratio(plt, rows, plots_dir, written, notes)
    if not measured:
        notes = [n for n in notes if not n.startswith(("speedup", "predicted vs", "acceptance",
                                                       "time breakdown"))]
    index = write_index(results_dir, rows, written, notes)
    if not written:
        sys.stderr.write("%s: %s: nothing to plot in %d rows; wrote %s\n"
                         % (PROG, results_dir, len(rows), index))
        return 0
    sys.stderr.write("%s: %d plots (PNG + SVG) in %s; index %s\n"
                     % (PROG, len(written), plots_dir, index))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
