#!/usr/bin/env python3
"""Plots, an index page and the HTML report for one speclab results directory.

    python3 analysis/plot_results.py RESULTS_DIR

Reads RESULTS_DIR/results.jsonl (one flat JSON row per cell, as `speclab run` writes it), and
when present predictions.jsonl (`speclab predict`), tables.md, config.yaml and
config.resolved.json. Writes PNG and SVG under RESULTS_DIR/plots/, RESULTS_DIR/index.md and
the self-contained report RESULTS_DIR/index.html (report_html.py). One colour per drafter in
every figure (result_rows.drafter_colors):

  speedup_vs_gamma      measured speedup (bootstrap interval) with the prediction (dashed) and
                        Theorem 3.8 (dotted), one panel per temperature on a shared y-axis;
                        with a single gamma, the drafters side by side instead
  predicted_vs_measured the summary: every cell's predicted speedup against its measurement
  acceptance_by_position  conditional acceptance at draft position i, counts pooled over
                        gamma, 95% Wilson band, the counts in the legend
  time_breakdown        draft / verify / sample / rest milliseconds per generated token, one
                        bar per cell, the target-alone (baseline) time per token marked
  predicted_grid        cost-only rows: predicted speedup vs gamma for several alphas
                        (Theorem 3.8 dashed, refined solid)
  target_tk_ratio       the target's verification cost curve T(k)/T(1)
  speedup_vs_concurrency  configs with sweep.concurrency: throughput speedup (solid, 95%
                        bootstrap interval), per-request speedup (dashed) and the predicted
                        throughput speedup (dotted, hollow markers: the closed loop replayed
                        from the batched cost profile before the cell ran) against the number
                        of requests in flight N (log2 axis), one line per drafter and gamma, one
                        panel per temperature; at N = 1 the one-at-a-time speedup and its
                        prediction. The other figures then show the N = 1 cells only
  category_breakdown    acceptance, tokens per round and speedup per prompt category (Spec-Bench
                        layout), one bar per drafter and category with its 95% bootstrap
                        interval, one column of panels per temperature; read from
                        RESULTS_DIR/tables.json (`speclab run` writes it; the intervals are
                        speclab's prompt-clustered bootstrap, experiments/results/category_tables.h)

Missing fields are skipped (rows from runs without a baseline have no speedup; cost-only rows
have no acceptance). Exit codes: 0 written, or nothing to plot (said on stderr); 1 matplotlib
missing (a python3 without it reruns the script once under /usr/bin/python3, where Debian's
python3-matplotlib lives; index.html is still written, with the tables and without figures);
2 bad input (missing directory or results file, a malformed row in results.jsonl or
predictions.jsonl), one line on stderr naming the file and line. As in speclab's own reader,
text after the last newline (a row torn by a killed run) is ignored.
"""

import json
import os
import sys

from result_rows import (BadInput, FIELD_LABELS, PROG, die, drafter_colors, drafter_of, field,
                         field_key, field_list, fmt_value, is_cost_only, merge_predictions, num,
                         num_list, panel_varying_keys, read_predictions, read_rows, same_temp,
                         series_label, temp_of, temperatures, wilson)
import report_html

PLOT_NAMES = [
    "speedup_vs_gamma",
    "predicted_vs_measured",
    "acceptance_by_position",
    "time_breakdown",
    "predicted_grid",
    "target_tk_ratio",
    "category_breakdown",
    "speedup_vs_concurrency",
]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


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
    """pyplot, or None when no python3 at hand has matplotlib."""
    try:
        import matplotlib
    except ImportError:
        reexec_with_system_python()
        return None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "speclab"  # stable SVG ids from run to run
    matplotlib.rcParams["figure.dpi"] = 100
    # Text stays text in the SVG: selectable and searchable in the HTML report.
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    return plt


def save(plt, fig, plots_dir, name, written):
    for ext in ("png", "svg"):
        path = os.path.join(plots_dir, "%s.%s" % (name, ext))
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(path, bbox_inches="tight", metadata=meta, dpi=110 if ext == "png" else None)
    plt.close(fig)
    written.append(name)


def make_panels(plt, n_rows, n_cols, w=4.2, h=3.2, sharey=False):
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(w * n_cols, h * n_rows), squeeze=False,
                             sharey=sharey)
    return fig, axes


def series_markers(rows, keys):
    """series label -> marker: drafters are told apart by colour, the other varying cell
    parameters (top-p, lenience, ...) by marker."""
    labels = sorted({series_label(r, keys) for r in rows})
    return {l: MARKERS[i % len(MARKERS)] for i, l in enumerate(labels)}


def legend_below(fig, handles, ncol=4):
    """One legend for the whole figure, under the panels (every panel shares the drafters'
    colours, so one key serves all). Returns the number of entries."""
    if handles:
        fig.legend(handles, [h.get_label() for h in handles], loc="lower center",
                   ncol=min(ncol, len(handles)), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.0))
    return len(handles)


def finish_with_legend(fig, n_entries, ncol=4, title=None):
    rows_of_legend = (n_entries + ncol - 1) // ncol
    bottom = min(0.45, 0.04 + 0.05 * rows_of_legend * (4.0 / max(fig.get_size_inches()[1], 1)))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, bottom, 1, 0.95 if title else 1))


def style_key(colors, drafters, markers, single_gamma, kinds):
    """Legend handles: one colour per drafter, then what each line style (or marker) means."""
    from matplotlib.lines import Line2D

    h = [Line2D([], [], marker="s", ls="", color=colors[d], ms=8, label=d) for d in drafters]
    h.append(Line2D([], [], marker="o", ls="" if single_gamma else "-", color="black", ms=4,
                    label="measured (95% CI)"))
    for quantity, style, marker in (("predicted", "--", "_"), ("thm38", ":", "x")):
        if quantity in kinds:
            h.append(Line2D([], [], ls="" if single_gamma else style, marker=marker if
                            single_gamma else None, color="black", ms=10, mew=2,
                            label=kinds[quantity]))
    if len(markers) > 1:
        h += [Line2D([], [], marker=m, ls="", color="grey", label=l) for l, m in
              sorted(markers.items())]
    return h


def plot_speedup_vs_gamma(plt, rows, colors, plots_dir, written, notes):
    rows = [r for r in rows if num(r, "speedup") is not None and num(r, "gamma") is not None]
    if not rows:
        notes.append("speedup vs gamma: no measured speedups (runs without `measure.baseline` "
                     "have none)")
        return
    drafters = sorted({drafter_of(r) for r in rows})
    temps = temperatures(rows)
    keys = panel_varying_keys(rows)
    markers = series_markers(rows, keys)
    single_gamma = len({num(r, "gamma") for r in rows}) == 1
    fig, axes = make_panels(plt, 1, len(temps), w=5.0 if not single_gamma else 1.2 + 0.9 *
                            len(drafters), h=3.6, sharey=True)
    for j, t in enumerate(temps):
        ax = axes[0][j]
        sel = [r for r in rows if same_temp(temp_of(r), t)]
        groups = {}
        for r in sel:
            groups.setdefault((drafter_of(r), series_label(r, keys)), []).append(r)
        for (d, label), grp in sorted(groups.items()):
            grp.sort(key=lambda r: num(r, "gamma"))
            color, marker = colors[d], markers[label]
            name = d + (" (%s)" % label if label else "")
            if single_gamma:  # one gamma: drafters side by side instead of a one-point line
                x = [drafters.index(d) + 0.12 * (sorted(markers).index(label) -
                                                 (len(markers) - 1) / 2.0)] * len(grp)
            else:
                x = [num(r, "gamma") for r in grp]
            s = [num(r, "speedup") for r in grp]
            lo = [num(r, "speedup_ci_lo") for r in grp]
            hi = [num(r, "speedup_ci_hi") for r in grp]
            yerr = None
            if all(v is not None for v in lo + hi):
                yerr = [[max(0.0, sv - l) for sv, l in zip(s, lo)],
                        [max(0.0, h - sv) for sv, h in zip(s, hi)]]
            ax.errorbar(x, s, yerr=yerr, fmt=marker + ("" if single_gamma else "-"), color=color,
                        capsize=3, ms=5, lw=1.4, label=name + ": measured")
            for quantity, style in (("predicted", "--"), ("thm38", ":")):
                pts = [(xv, field(r, quantity), field_key(r, quantity))
                       for xv, r in zip(x, grp) if field(r, quantity) is not None]
                if not pts:
                    continue
                what = FIELD_LABELS.get(pts[0][2], quantity)
                if single_gamma:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "_" if quantity ==
                            "predicted" else "x", color=color, ms=14 if quantity == "predicted"
                            else 7, mew=2, label=name + ": " + what)
                else:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                            lw=1.3, alpha=0.9, label=name + ": " + what)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_title("temperature %s" % fmt_value(t), fontsize=10)
        if single_gamma:
            ax.set_xticks(range(len(drafters)))
            ax.set_xticklabels(drafters, rotation=20, fontsize=8)
            ax.set_xlim(-0.6, len(drafters) - 0.4)
            ax.set_xlabel("drafter (gamma = %s)" % fmt_value(num(rows[0], "gamma")))
        else:
            ax.set_xlabel("gamma")
            ax.xaxis.get_major_locator().set_params(integer=True)
        if j == 0:
            ax.set_ylabel("speedup over the target alone")
    handles = style_key(colors, drafters, markers, single_gamma,
                        {q: FIELD_LABELS.get(k, k) for q, k in (
                            ("predicted", next((field_key(r, "predicted") for r in rows
                                                if field_key(r, "predicted")), None)),
                            ("thm38", next((field_key(r, "thm38") for r in rows
                                            if field_key(r, "thm38")), None))) if k})
    n = legend_below(fig, handles, ncol=3)
    finish_with_legend(fig, n, ncol=3, title="Speedup vs gamma: measured (95% bootstrap CI), "
                       "predicted (dashed), Theorem 3.8 (dotted)" if not single_gamma else
                       "Speedup at one gamma: measured (95% bootstrap CI) and predicted")
    save(plt, fig, plots_dir, "speedup_vs_gamma", written)


def concurrency_of(r):
    n = num(r, "concurrency")
    return int(n) if n is not None else 1


def plot_speedup_vs_concurrency(plt, rows, colors, plots_dir, written, notes):
    """Throughput and per-request speedup against N, measured, and the predicted throughput."""
    if not any(concurrency_of(r) > 1 for r in rows):
        return
    rows = [r for r in rows if num(r, "speedup") is not None]
    if not rows:
        notes.append("speedup vs concurrency: no measured speedups")
        return
    temps = temperatures(rows)
    fig, axes = make_panels(plt, 1, len(temps), w=5.0, h=3.6, sharey=True)
    gammas = sorted({num(r, "gamma") for r in rows})
    handles_seen = set()
    for j, t in enumerate(temps):
        ax = axes[0][j]
        groups = {}
        for r in rows:
            if not same_temp(temp_of(r), t):
                continue
            key = (drafter_of(r), num(r, "gamma"), fmt_value(num_list(r, "synthetic_acceptance"))
                   if num_list(r, "synthetic_acceptance") else "")
            groups.setdefault(key, []).append(r)
        for (d, g, alpha), grp in sorted(groups.items(), key=lambda kv: str(kv[0])):
            grp.sort(key=concurrency_of)
            x = [concurrency_of(r) for r in grp]
            tput = [num(r, "speedup") if concurrency_of(r) == 1 else num(r, "throughput_speedup")
                    for r in grp]
            lo = [num(r, "speedup_ci_lo") if concurrency_of(r) == 1
                  else num(r, "throughput_speedup_ci_lo") for r in grp]
            hi = [num(r, "speedup_ci_hi") if concurrency_of(r) == 1
                  else num(r, "throughput_speedup_ci_hi") for r in grp]
            marker = MARKERS[gammas.index(g) % len(MARKERS)]
            label = "%s, gamma %s%s" % (d, fmt_value(g), ", alpha " + alpha if alpha else "")
            pts = [(xv, v, l, h) for xv, v, l, h in zip(x, tput, lo, hi) if v is not None]
            if pts:
                yerr = None
                if any(p[2] is not None and p[3] is not None for p in pts):
                    # A point without an interval (every request in flight at once: not
                    # estimated) gets no bar, not a zero-width one read as certainty.
                    yerr = [[max(0.0, p[1] - p[2]) if p[2] is not None else 0.0 for p in pts],
                            [max(0.0, p[3] - p[1]) if p[3] is not None else 0.0 for p in pts]]
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=yerr, fmt=marker + "-",
                            color=colors[d], capsize=3, ms=5, lw=1.4,
                            label=label + ": throughput" if label not in handles_seen else None)
            pred = [(xv, num(r, "predicted_speedup") if concurrency_of(r) == 1
                     else num(r, "predicted_throughput_speedup")) for xv, r in zip(x, grp)]
            pred = [p for p in pred if p[1] is not None]
            if pred:
                ax.plot([p[0] for p in pred], [p[1] for p in pred], marker + ":",
                        color=colors[d], mfc="none", lw=1.2, ms=6,
                        label=label + ": predicted" if label not in handles_seen else None)
            per = [(xv, num(r, "speedup")) for xv, r in zip(x, grp)]
            ax.plot([p[0] for p in per], [p[1] for p in per], marker + "--", color=colors[d],
                    lw=1.0, ms=4, alpha=0.8,
                    label=label + ": per request" if label not in handles_seen else None)
            handles_seen.add(label)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ns = sorted({concurrency_of(r) for r in rows})
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_xlabel("requests in flight N")
        ax.set_title("temperature %s" % fmt_value(t), fontsize=10)
        if j == 0:
            ax.set_ylabel("speedup over the plain batched loop")
    handles, labels = axes[0][0].get_legend_handles_labels()
    n = len(labels)
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.09 - 0.045 * ((n + 1) // 2)))
    fig.suptitle("Speedup vs concurrency (continuous batching): throughput (solid, 95% bootstrap "
                 "CI) and per request (dashed), measured; throughput predicted before the run "
                 "(dotted)", fontsize=10)
    save(plt, fig, plots_dir, "speedup_vs_concurrency", written)


def plot_predicted_vs_measured(plt, rows, colors, plots_dir, written, notes):
    """The summary figure: every cell's predicted speedup against its measured one, one colour
    per drafter, with the y = x line."""
    rows = [r for r in rows if num(r, "speedup") is not None and
            (field(r, "predicted") is not None or field(r, "thm38") is not None)]
    if not rows:
        notes.append("predicted vs measured: no rows with both a measured and a predicted speedup")
        return
    drafters = sorted({drafter_of(r) for r in rows})
    fig, ax = plt.subplots(figsize=(6.2, 6.0))
    allv = []
    errs = {"predicted": [], "thm38": []}
    kinds = {}
    for d in drafters:
        sel = [r for r in rows if drafter_of(r) == d]
        for quantity, marker, filled in (("predicted", "o", True), ("thm38", "^", False)):
            pts = [r for r in sel if field(r, quantity) is not None]
            if not pts:
                continue
            kinds.setdefault(quantity, FIELD_LABELS.get(field_key(pts[0], quantity), quantity))
            xs = [num(r, "speedup") for r in pts]
            ys = [field(r, quantity) for r in pts]
            lo = [num(r, "speedup_ci_lo") for r in pts]
            hi = [num(r, "speedup_ci_hi") for r in pts]
            if quantity == "predicted" and all(v is not None for v in lo + hi):
                ax.errorbar(xs, ys, xerr=[[max(0.0, x - l) for x, l in zip(xs, lo)],
                                          [max(0.0, h - x) for x, h in zip(xs, hi)]],
                            fmt="none", ecolor=colors[d], alpha=0.45, lw=1)
            ax.scatter(xs, ys, marker=marker, s=36 if filled else 30,
                       facecolors=colors[d] if filled else "none", edgecolors=colors[d],
                       alpha=0.9, linewidths=1.2)
            allv += xs + ys
            errs[quantity] += [y / x - 1 for x, y in zip(xs, ys) if x > 0]
    lo, hi = min(allv), max(allv)
    pad = 0.08 * (hi - lo if hi > lo else 1.0)
    lo, hi = lo - pad, hi + pad
    ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="grey",
                    alpha=0.12, lw=0)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured speedup (95% bootstrap CI)")
    ax.set_ylabel("predicted speedup")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="s", ls="", color=colors[d], ms=8, label=d)
               for d in drafters]
    for quantity, marker, filled in (("predicted", "o", True), ("thm38", "^", False)):
        if errs[quantity]:
            mae = 100 * sum(abs(e) for e in errs[quantity]) / len(errs[quantity])
            handles.append(Line2D([], [], marker=marker, ls="", color="black", ms=6,
                                  markerfacecolor="black" if filled else "none",
                                  label="%s: mean |error| %.1f%% (n=%d)"
                                  % (kinds[quantity], mae, len(errs[quantity]))))
    handles.append(Line2D([], [], color="grey", ls="--", label="y = x (band: +-10%)"))
    n = legend_below(fig, handles, ncol=2)
    finish_with_legend(fig, n, ncol=2, title="Predicted vs measured speedup, per cell")
    save(plt, fig, plots_dir, "predicted_vs_measured", written)


def position_counts(r):
    """Per draft position i: (accepted, tested) counts of the row, or (acceptance, None) when
    the row has only the rates. Positions never tested are left out."""
    a = num_list(r, "acceptance_by_position") or []
    tested = num_list(r, "tested_by_position")
    accepted = num_list(r, "accepted_by_position")
    out = {}
    for i in range(max(len(a), len(tested or []))):
        n = tested[i] if tested and i < len(tested) else None
        if n is not None:
            if n <= 0:
                continue  # never tested: not data
            k = accepted[i] if accepted and i < len(accepted) and accepted[i] is not None else (
                a[i] * n if i < len(a) and a[i] is not None else None)
            if k is not None:
                out[i + 1] = (k, n)
        elif i < len(a) and a[i] is not None:
            out[i + 1] = (a[i], None)
    return out


def plot_acceptance(plt, rows, colors, plots_dir, written, notes):
    rows = [r for r in rows if position_counts(r)]
    if not rows:
        notes.append("acceptance by position: no rows with `acceptance_by_position`")
        return
    temps = temperatures(rows)
    keys = panel_varying_keys(rows)
    markers = series_markers(rows, keys)
    fig, axes = make_panels(plt, 1, len(temps), w=5.0, h=3.6, sharey=True)
    for j, t in enumerate(temps):
        ax = axes[0][j]
        groups = {}
        for r in rows:
            if same_temp(temp_of(r), t):
                groups.setdefault((drafter_of(r), series_label(r, keys)), []).append(r)
        for (d, label), grp in sorted(groups.items()):
            # Conditional acceptance at position i does not depend on gamma (gamma only caps
            # how far a round can go): pool the counts of every gamma.
            pooled, rates = {}, {}
            for r in grp:
                for pos, (k, n) in position_counts(r).items():
                    if n is None:
                        rates.setdefault(pos, []).append(k)
                    else:
                        pk, pn = pooled.get(pos, (0.0, 0.0))
                        pooled[pos] = (pk + k, pn + n)
            name = d + (" (%s)" % label if label else "")
            color, marker = colors[d], markers[label]
            if pooled:
                xs = sorted(pooled)
                ys = [pooled[p][0] / pooled[p][1] for p in xs]
                ci = [wilson(pooled[p][0], pooled[p][1]) for p in xs]
                ax.fill_between(xs, [c[0] for c in ci], [c[1] for c in ci], color=color,
                                alpha=0.18, lw=0)
                ax.plot(xs, ys, marker + "-", color=color, ms=4, lw=1.4,
                        label="%s: n=%s" % (name, "/".join("%d" % pooled[p][1] for p in xs)))
            elif rates:
                xs = sorted(rates)
                ax.plot(xs, [sum(rates[p]) / len(rates[p]) for p in xs], marker + "-",
                        color=color, ms=4, lw=1.4, label=name + " (no counts in the rows)")
            prof = next((field_list(r, "profile_by_position") for r in grp
                         if field_list(r, "profile_by_position")), None)
            if prof:
                pts = [(i, v) for i, v in enumerate(prof, start=1) if v is not None]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "--", color=color, lw=1.2,
                        label=name + ": profile (teacher-forced)")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title("temperature %s" % fmt_value(t), fontsize=10)
        ax.set_xlabel("draft position i")
        if j == 0:
            ax.set_ylabel("P(accept i | accepted < i)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        if ax.lines:  # per panel: the counts differ between panels
            ax.legend(fontsize=6.5, loc="lower left", title="drafts tested at i = 1, 2, ...",
                      title_fontsize=6.5, framealpha=0.85)
    fig.suptitle("Conditional acceptance by draft position, pooled over gamma (band: 95% "
                 "Wilson interval)", fontsize=11)
    fig.tight_layout()
    save(plt, fig, plots_dir, "acceptance_by_position", written)


def cell_label(r, keys):
    s = "%s g=%s T=%s" % (drafter_of(r), fmt_value(r.get("gamma")), fmt_value(r.get("temperature")))
    extra = series_label(r, keys)
    return s + (" " + extra if extra else "")


def tokens_of(r):
    return num(r, "tokens_spec")


def plot_time_breakdown(plt, rows, colors, plots_dir, written, notes):
    """Milliseconds per generated token, split into draft / verify / sample / the rest, one
    bar per cell, with the target-alone (baseline) time per token marked on each bar: a bar
    that ends left of its mark is a speedup."""
    parts = ("draft_s", "verify_s", "sample_s")
    sel = [r for r in rows if tokens_of(r) and all(num(r, p) is not None for p in parts)]
    per = "token"
    if not sel:
        sel = [r for r in rows if num(r, "rounds") and all(num(r, p) is not None for p in parts)]
        per = "round"
    if not sel:
        notes.append("time breakdown: no rows with tokens_spec (or rounds) and draft_s / "
                     "verify_s / sample_s")
        return
    keys = panel_varying_keys(sel)
    sel.sort(key=lambda r: (drafter_of(r), temp_of(r), series_label(r, keys), num(r, "gamma") or 0))
    n = len(sel)
    fig, ax = plt.subplots(figsize=(7.5, max(2.8, 0.3 * n + 1.6)))
    ypos = list(range(n))
    denom = [tokens_of(r) if per == "token" else num(r, "rounds") for r in sel]
    left = [0.0] * n
    shades = {"draft_s": None, "verify_s": "#8c8c8c", "sample_s": "#c8c8c8"}
    for p in parts:
        w = [num(r, p) / dn * 1e3 for r, dn in zip(sel, denom)]
        color = [colors[drafter_of(r)] for r in sel] if shades[p] is None else shades[p]
        ax.barh(ypos, w, left=left, color=color, height=0.72, edgecolor="white", lw=0.5)
        left = [a + b for a, b in zip(left, w)]
    if per == "token":
        rest = []
        for r, l in zip(sel, left):
            total = num(r, "spec_s_per_token")
            if total is None and num(r, "wall_spec_s") is not None:
                total = num(r, "wall_spec_s") / tokens_of(r)
            rest.append(max(0.0, total * 1e3 - l) if total is not None else 0.0)
        if any(rest):
            ax.barh(ypos, rest, left=left, color="white", edgecolor="#8c8c8c", hatch="///",
                    height=0.72, lw=0.5)
        base = [num(r, "baseline_s_per_token") for r in sel]
        for y, b in zip(ypos, base):
            if b is not None:
                ax.plot([b * 1e3, b * 1e3], [y - 0.46, y + 0.46], color="black", lw=2)
    ax.set_yticks(ypos)
    ax.set_yticklabels([cell_label(r, keys) for r in sel], fontsize=7)
    for tick, r in zip(ax.get_yticklabels(), sel):
        tick.set_color(colors[drafter_of(r)])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds per generated %s" % per)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=colors[d], label="draft: " + d)
               for d in sorted({drafter_of(r) for r in sel})]
    handles += [Patch(facecolor=shades["verify_s"], label="verify (target)"),
                Patch(facecolor=shades["sample_s"], label="sample")]
    if per == "token":
        handles += [Patch(facecolor="white", edgecolor="#8c8c8c", hatch="///",
                          label="rest of the round"),
                    Line2D([], [], color="black", lw=2, label="target alone (baseline) per token")]
    nl = legend_below(fig, handles, ncol=3)
    finish_with_legend(fig, nl, ncol=3, title="Where the time goes, per generated %s" % per)
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
    fig, axes = make_panels(plt, nrows, cols, w=4.6, h=3.5, sharey=True)
    for idx, ((d, extra), r) in enumerate(items):
        ax = axes[idx // cols][idx % cols]
        grid = [e for e in r["predicted_grid"] if isinstance(e, dict)]
        alphas = sorted({num(e, "alpha") for e in grid if num(e, "alpha") is not None})
        chosen = pick_alphas(alphas)
        for ci, a in enumerate(chosen):
            pts = sorted((num(e, "gamma"), num(e, "thm38"), num(e, "refined")) for e in grid
                         if num(e, "alpha") == a and num(e, "gamma") is not None)
            # A sequential map for alpha: the categorical palette means drafters.
            color = plt.cm.viridis(0.9 * ci / max(1, len(chosen) - 1))
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
        if idx % cols == 0:
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


CATEGORY_TABLES = (("category_acceptance", "acceptance (accepted / tested)"),
                   ("category_tokens_per_round", "tokens per round (tau)"),
                   ("category_speedup", "speedup"))


def read_category_tables(results_dir):
    """{table name: table} of the category_* tables in RESULTS_DIR/tables.json (the JSON of
    `speclab table --format json`), {} when the file is absent; BadInput when it is not that
    JSON. Several configs in one file: None (their categories are not comparable)."""
    path = os.path.join(results_dir, "tables.json")
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            tables = json.load(f)["tables"]
        out = {}
        for t in tables:
            if str(t["name"]).startswith("category_"):
                if t["name"] in out:
                    return None
                if not isinstance(t["columns"], list) or not isinstance(t["rows"], list):
                    raise TypeError("columns and rows must be lists")
                out[t["name"]] = t
        return out
    except (ValueError, KeyError, TypeError) as e:
        raise BadInput("%s: not the JSON of `speclab table --format json` (%s)" % (path, e))


def plot_category_breakdown(plt, tables, colors, plots_dir, written, notes):
    if tables is None:
        notes.append("category breakdown: tables.json holds several configs")
        return
    if not tables:
        notes.append("category breakdown: no category tables in tables.json (rows without "
                     "prompt categories, or no tables.json: `speclab table RESULTS --format json "
                     "> tables.json`)")
        return
    some = next(iter(tables.values()))
    # Columns: draft, T, gamma, policy, then per category (and overall) value, lo, hi, n.
    cats = some["columns"][4::4]
    temps = sorted({r["T"] for r in some["rows"] if r.get("T") is not None})
    metrics = [(n, label) for n, label in CATEGORY_TABLES if n in tables]
    # One row of panels per quantity, one column per temperature.
    fig, axes = make_panels(plt, len(metrics), len(temps), w=max(4.5, 0.55 * len(cats) + 2.5),
                            h=3.0)
    series = []  # (draft, gamma, policy) in table order
    for r in some["rows"]:
        key = (r["draft"], r["gamma"], r["policy"])
        if key not in series:
            series.append(key)
    several_gammas = len({(k[1], k[2]) for k in series}) > 1
    width = 0.8 / max(1, len(series))
    from matplotlib.patches import Patch
    handles = []
    for i, (d, g, pol) in enumerate(series):
        label = d + (" g=%s %s" % (fmt_value(g), pol) if several_gammas else "")
        handles.append(Patch(color=colors.get(d, "grey"), label=label))
    for ti, t in enumerate(temps):
        for mi, (name, label) in enumerate(metrics):
            ax = axes[mi][ti]
            for si, key in enumerate(series):
                row = next((r for r in tables[name]["rows"]
                            if (r["draft"], r["gamma"], r["policy"]) == key and r["T"] == t), None)
                if row is None:
                    continue
                xs, ys, lo, hi = [], [], [], []
                for ci, c in enumerate(cats):
                    v = row.get(c)
                    if v is None:
                        continue
                    xs.append(ci - 0.4 + width * (si + 0.5))
                    ys.append(v)
                    lo.append(v - (row.get(c + "_ci_lo") if row.get(c + "_ci_lo") is not None
                                   else v))
                    hi.append((row.get(c + "_ci_hi") if row.get(c + "_ci_hi") is not None
                               else v) - v)
                ax.bar(xs, ys, width=width * 0.92, color=colors.get(key[0], "grey"),
                       yerr=[lo, hi], error_kw={"elinewidth": 0.8, "capsize": 1.5})
            if name == "category_speedup":
                ax.axhline(1.0, color="grey", ls=":", lw=1)
            if name == "category_acceptance":
                ax.set_ylim(0, 1.02)
            ax.axvline(len(cats) - 1.5, color="lightgrey", lw=0.8)  # overall apart
            ax.set_xticks(range(len(cats)))
            n = [some["rows"][0].get(c + "_n") for c in cats]
            ax.set_xticklabels(["%s\nn=%s" % (c, "-" if k is None else "%d" % k)
                                for c, k in zip(cats, n)], fontsize=7, rotation=35, ha="right")
            ax.set_title("%s, T = %s" % (label, fmt_value(t)), fontsize=9)
    legend_below(fig, handles, ncol=4)
    finish_with_legend(fig, len(handles), ncol=4,
                       title="By prompt category (bars: 95% bootstrap interval over prompts; "
                             "n = prompts)")
    save(plt, fig, plots_dir, "category_breakdown", written)


# ---------------------------------------------------------------------------------------------
# Index page

def write_index(results_dir, rows, written, notes):
    names = sorted({str(r.get("experiment")) for r in rows if r.get("experiment") is not None})
    title = ", ".join(names) if names else os.path.basename(os.path.abspath(results_dir))
    out = ["# Results: %s" % title, "",
           "The shareable report with figures, tables and the config: [index.html](index.html).",
           ""]
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
        out += ["### %s" % report_html.TITLES.get(name, name), "", report_html.CAPTIONS.get(name, ""), "",
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
        predictions = read_predictions(results_dir)
        category_tables = read_category_tables(results_dir)
    except BadInput as e:
        die(str(e), 2)
    if not rows:
        sys.stderr.write("%s: %s: no result rows; nothing to plot\n"
                         % (PROG, os.path.join(results_dir, "results.jsonl")))
        return 0
    merge_predictions(rows, predictions)
    plots_dir = os.path.join(results_dir, "plots")
    if os.path.isdir(plots_dir):
        for name in PLOT_NAMES:  # plots from an earlier run that this one does not make
            for ext in ("png", "svg"):
                p = os.path.join(plots_dir, "%s.%s" % (name, ext))
                if os.path.exists(p):
                    os.remove(p)
    plt = setup_matplotlib()
    if plt is None:
        # The tables still make a report; the figures need matplotlib.
        notes = ["all figures: python3 with matplotlib is needed (Debian: apt-get install "
                 "python3-matplotlib)"]
        report_html.write_report(results_dir, rows, [], notes, predictions)
        die("python3 with matplotlib is needed (Debian: apt-get install python3-matplotlib); "
            "wrote %s without figures" % os.path.join(results_dir, "index.html"), 1)
    os.makedirs(plots_dir, exist_ok=True)
    written, notes = [], []
    measured_all = [r for r in rows if not is_cost_only(r)]
    # Cells of concurrency > 1 have their own figure; the others show one request at a time.
    measured = [r for r in measured_all if concurrency_of(r) == 1]
    colors = drafter_colors(rows)  # every row: the same colours as the report's tables
    plot_speedup_vs_concurrency(plt, measured_all, colors, plots_dir, written, notes)
    plot_speedup_vs_gamma(plt, measured, colors, plots_dir, written, notes)
    plot_predicted_vs_measured(plt, measured, colors, plots_dir, written, notes)
    plot_acceptance(plt, measured, colors, plots_dir, written, notes)
    plot_time_breakdown(plt, measured, colors, plots_dir, written, notes)
    plot_predicted_grid(plt, rows, plots_dir, written, notes)
    plot_tk_ratio(plt, rows, plots_dir, written, notes)
    plot_category_breakdown(plt, category_tables, colors, plots_dir, written, notes)
    if not measured:
        notes = [n for n in notes if not n.startswith(("speedup", "predicted vs", "acceptance",
                                                       "time breakdown", "category"))]
    index = write_index(results_dir, rows, written, notes)
    report = report_html.write_report(results_dir, rows, written, notes, predictions)
    if not written:
        sys.stderr.write("%s: %s: nothing to plot in %d rows; wrote %s and %s\n"
                         % (PROG, results_dir, len(rows), index, report))
        return 0
    sys.stderr.write("%s: %d plots (PNG + SVG) in %s; index %s; report %s\n"
                     % (PROG, len(written), plots_dir, index, report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
