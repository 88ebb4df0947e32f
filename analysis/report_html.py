"""The shareable report of one speclab run: RESULTS_DIR/index.html.

One self-contained file (no scripts, no external links, figures inlined as SVG) that a
researcher can mail or attach: the experiment's question, when and on which commit and
machine it ran, the figures plot_results.py made, the tables (every cell; the best gamma per
group, predicted and measured; the run conditions; the model identities) and the config, both
as written (with its header comment) and fully resolved (overrides and defaults applied).

Inputs, all in RESULTS_DIR: results.jsonl (the rows), plots/NAME.svg (the figures),
predictions.jsonl (`speclab predict`, optional), config.yaml (the config file as written) and
config.resolved.json (the resolved config), both copied there by `speclab run`. Rows from an
older or newer speclab are fine: every field is optional, and renamed fields are read under
either name (result_rows.FIELDS).
"""

import datetime
import html
import json
import os
import re

from result_rows import (FIELD_LABELS, drafter_colors, drafter_of, field, field_key, flags_of,
                         fmt_value, is_cost_only, num, panel_varying_keys, prediction_error,
                         series_label, temp_of)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TITLES = {
    "predicted_vs_measured": "Predicted vs measured speedup",
    "speedup_vs_gamma": "Speedup vs gamma",
    "acceptance_by_position": "Acceptance by draft position",
    "time_breakdown": "Where the time goes",
    "predicted_grid": "Predicted speedup vs gamma (cost-only rows)",
    "target_tk_ratio": "Target verification cost T(k)/T(1)",
    "category_breakdown": "By prompt category",
}

CAPTIONS = {
    "category_breakdown": "Acceptance (accepted / tested drafts), tokens per round and speedup "
                          "per prompt category (Spec-Bench layout), one colour per drafter, "
                          "one column of panels per temperature; the last group is all prompts. "
                          "Bars: 95% bootstrap interval over the category's prompts (speclab's "
                          "category tables); n = prompts.",
    "predicted_vs_measured": "Every cell's predicted speedup against its measurement, one colour "
                             "per drafter. Filled circles: the prediction (out of sample from "
                             "`speclab predict` when the rows carry it, else the refined in-run "
                             "model); open triangles: Theorem 3.8 (Leviathan et al. 2023). "
                             "Horizontal bars: 95% bootstrap interval of the measurement; grey "
                             "band: within 10% of y = x.",
    "speedup_vs_gamma": "Measured speedup (95% bootstrap interval) per drafter, one panel per "
                        "temperature on a shared y-axis, with the prediction (dashed) and "
                        "Theorem 3.8 (dotted). Above the dotted grey line at 1 speculation wins.",
    "acceptance_by_position": "Conditional acceptance P(accept position i | positions < i "
                              "accepted), counts pooled over gamma, 95% Wilson band; n lists "
                              "the drafts tested at each position. Dashed: the pair's "
                              "teacher-forced profile where the rows carry it.",
    "time_breakdown": "Milliseconds per generated token: drafting (drafter colour), verification "
                      "by the target, sampling, and the rest of the round (hatched). The black "
                      "mark on each bar is the target alone per token (the baseline): bars "
                      "ending left of their mark are speedups.",
    "predicted_grid": "Cost-only rows: predicted speedup vs gamma for several alphas from the "
                      "measured c and T(k) (refined solid, Theorem 3.8 dashed), shared y-axis.",
    "target_tk_ratio": "The target's verification cost T(k)/T(1) as measured in the run, "
                       "against Theorem 3.8's assumption T(k) = T(1).",
}
FIGURE_ORDER = ["predicted_vs_measured", "speedup_vs_gamma", "acceptance_by_position",
                "time_breakdown", "predicted_grid", "target_tk_ratio"]

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1100px;padding:1.5em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:1.8em}blockquote{margin:.6em 0;padding:.5em 1em;background:#f4f6fa;
border-left:4px solid #1f77b4;font-size:1.1em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top}
td{white-space:nowrap}
th{background:#f2f2f2}td.l,th.l{text-align:left}
figure{margin:1.2em 0;page-break-inside:avoid}figure svg{max-width:100%;height:auto}
figcaption{font-size:.88em;color:#444;max-width:60em}
pre{white-space:pre-wrap;background:#f7f7f7;border:1px solid #e2e2e2;padding:.7em;overflow-x:auto;font-size:.8em}
.sw{display:inline-block;width:.8em;height:.8em;margin-right:.35em;vertical-align:-.05em}
.flag{color:#b00020}.muted{color:#777}dl.meta{display:grid;grid-template-columns:max-content 1fr;
gap:.15em 1em;font-size:.92em}dl.meta dt{font-weight:600}dl.meta dd{margin:0}
"""


def esc(x):
    return html.escape(str(x), quote=True)


def fnum(v, fmt="%.2f"):
    return fmt % v if v is not None else ""


def pct(v):
    return "%+.1f%%" % (100 * v) if v is not None else ""


# ---------------------------------------------------------------------------------------------
# The config: as written (header comment, question) and resolved


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def config_text(results_dir, rows):
    """(text, where) of the config file as written: the copy `speclab run` keeps beside the
    results, else the file the rows name (as given, then from the repository root)."""
    copy = os.path.join(results_dir, "config.yaml")
    text = read_text(copy)
    if text is not None:
        return text, "config.yaml"
    for r in rows:
        f = r.get("config_file")
        if isinstance(f, str) and f:
            for p in (f, os.path.join(REPO_ROOT, f)):
                text = read_text(p)
                if text is not None:
                    return text, f
    return None, None


def header_comment(text):
    """The comment lines at the top of a YAML file, without their '#'."""
    out = []
    for line in (text or "").splitlines():
        if line.startswith("#"):
            out.append(line[1:][1:] if line.startswith("# ") else line[1:])
        elif line.strip():
            break
        else:
            out.append("")
    while out and not out[-1].strip():
        out.pop()
    return out


def question_of(header, resolved, rows):
    """The `# Question:` paragraph of the header comment; else the config's `question` key."""
    for i, line in enumerate(header):
        if line.lower().startswith("question:"):
            para = [line.split(":", 1)[1].strip()]
            for cont in header[i + 1:]:
                if not cont.strip() or re.match(r"^[A-Z][A-Za-z ]{0,30}:", cont):
                    break
                para.append(cont.strip())
            return " ".join(p for p in para if p)
    if isinstance(resolved, dict) and resolved.get("question"):
        return str(resolved["question"])
    qs = sorted({str(r["question"]) for r in rows if r.get("question")})
    return " / ".join(qs) if qs else None


def resolved_config(results_dir):
    text = read_text(os.path.join(results_dir, "config.resolved.json"))
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Figures: matplotlib's SVG, inlined


def inline_svg(path, prefix):
    """The <svg> element of `path` for inlining: XML prolog and doctype dropped, and every id
    (and reference to it) prefixed so the figures' clip paths and markers cannot collide."""
    text = read_text(path)
    if text is None:
        return None
    start = text.find("<svg")
    if start < 0:
        return None
    svg = text[start:]
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    svg = re.sub(r'\bid="([^"]+)"', lambda m: 'id="%s-%s"' % (prefix, m.group(1)), svg)
    svg = re.sub(r'#([A-Za-z_][\w.:-]*)(?=[)"])',
                 lambda m: "#%s-%s" % (prefix, m.group(1)) if m.group(1) in ids else m.group(0),
                 svg)
    return svg


# ---------------------------------------------------------------------------------------------
# Tables


def table(head, body, left=()):
    """An HTML table; `left` are the column indices aligned left (text)."""
    out = ["<table><thead><tr>"]
    out += ['<th class="l">%s</th>' % h if i in left else "<th>%s</th>" % h
            for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append("<tr>" + "".join('<td class="l">%s</td>' % c if i in left else "<td>%s</td>" % c
                                    for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def swatch(color):
    return '<span class="sw" style="background:%s"></span>' % color


def interval(v, lo, hi, fmt="%.2f"):
    if v is None:
        return ""
    s = fmt % v
    if lo is not None and hi is not None:
        s += ' <span class="muted">[%s, %s]</span>' % (fmt % lo, fmt % hi)
    return s


def cells_table(rows, colors):
    keys = panel_varying_keys(rows)
    rows = sorted(rows, key=lambda r: (drafter_of(r), temp_of(r), series_label(r, keys),
                                       num(r, "gamma") or 0))
    pred_keys = sorted({field_key(r, "predicted") for r in rows if field_key(r, "predicted")})
    pair_keys = sorted({field_key(r, "alpha_pair") for r in rows if field_key(r, "alpha_pair")})
    head = ["drafter", "T", "gamma"] + [esc(k) for k in keys] + [
        "alpha (measured)", esc(" / ".join(FIELD_LABELS.get(k, k) for k in pair_keys) or
                                "alpha (pair)"),
        "tokens / round", "speedup [95% CI]",
        esc(" / ".join(FIELD_LABELS.get(k, k) for k in pred_keys) or "predicted"),
        "error", "Theorem 3.8", "flags"]
    body = []
    for r in rows:
        d = drafter_of(r)
        flags = flags_of(r)
        body.append([swatch(colors[d]) + esc(d), esc(fmt_value(r.get("temperature"))),
                     esc(fmt_value(r.get("gamma")))] +
                    [esc(fmt_value(r.get(k))) for k in keys] + [
            fnum(num(r, "alpha_empirical")),
            interval(field(r, "alpha_pair"), field(r, "alpha_pair_ci_lo"),
                     field(r, "alpha_pair_ci_hi")),
            fnum(num(r, "tau")),
            interval(num(r, "speedup"), num(r, "speedup_ci_lo"), num(r, "speedup_ci_hi")),
            fnum(field(r, "predicted")), pct(prediction_error(r)), fnum(field(r, "thm38")),
            '<span class="flag">%s</span>' % esc(", ".join(flags)) if flags else ""])
    n_left = 3 + len(keys)
    return table(head, body, left=(0, n_left + 8))


def group_key(row, keys):
    return tuple(json.dumps(row.get(k), sort_keys=True) for k in keys)


def best_gamma_table(rows, predictions, colors):
    """Per group of cells that differ only in gamma: the measured best gamma and the predicted
    one (`speclab predict`'s group rows, else the argmax of the rows' own predictions)."""
    measured = [r for r in rows if num(r, "speedup") is not None and num(r, "gamma") is not None]
    if not measured:
        return None
    by_cell = {p.get("cell_id"): p for p in predictions if p.get("cell_id") is not None}
    group_rows = [p for p in predictions if num(p, "predicted_best_gamma") is not None]
    skip = {"gamma", "cell_id", "cell_index"}
    param_keys = ["drafter", "temperature"] + [k for k in panel_varying_keys(measured)]
    groups = {}
    for r in measured:
        groups.setdefault(group_key(r, param_keys), []).append(r)
    if len(groups) == len(measured) and not group_rows:
        return None  # one gamma per group: nothing to choose
    body = []
    for gk, grp in sorted(groups.items()):
        best = max(grp, key=lambda r: num(r, "speedup"))
        predicted_best, source = None, ""
        for p in group_rows:  # the group row whose parameters all match this group
            shared = [k for k in p if k in param_keys and k not in skip]
            if shared and all(json.dumps(p.get(k), sort_keys=True) ==
                              json.dumps(grp[0].get(k), sort_keys=True) for k in shared):
                predicted_best, source = num(p, "predicted_best_gamma"), "predictions.jsonl"
                break
        if predicted_best is None:
            scored = []
            for r in grp:
                pv = field(r, "predicted")
                cell_pred = by_cell.get(r.get("cell_id"))
                if cell_pred is not None and num(cell_pred, "predicted_speedup") is not None:
                    pv = num(cell_pred, "predicted_speedup")
                if pv is not None:
                    scored.append((pv, r))
            if scored:
                predicted_best = num(max(scored, key=lambda x: x[0])[1], "gamma")
                source = "argmax of the cells' predictions"
        at_pred = next((r for r in grp if num(r, "gamma") == predicted_best), None)
        loss = (num(at_pred, "speedup") / num(best, "speedup") - 1) if at_pred is not None and \
            num(best, "speedup") else None
        d = drafter_of(grp[0])
        label = ", ".join("%s=%s" % (k, fmt_value(grp[0].get(k))) for k in param_keys[2:])
        body.append([swatch(colors[d]) + esc(d), esc(fmt_value(grp[0].get("temperature"))),
                     esc(label), str(len(grp)), esc(fmt_value(best.get("gamma"))),
                     fnum(num(best, "speedup")),
                     esc(fmt_value(predicted_best)) if predicted_best is not None else "",
                     fnum(num(at_pred, "speedup")) if at_pred is not None else "",
                     pct(loss), esc(source)])
    head = ["drafter", "T", "other parameters", "gammas", "measured best gamma", "its speedup",
            "predicted best gamma", "measured speedup there", "lost vs best", "prediction from"]
    if len(param_keys) == 2:  # nothing but drafter and temperature tells the groups apart
        head.pop(2)
        body = [b[:2] + b[3:] for b in body]
        return table(head, body, left=(0, 8))
    return table(head, body, left=(0, 2, 9))


def distinct(rows, key):
    vals = []
    for r in rows:
        v = r.get(key)
        if v is not None and v not in vals:
            vals.append(v)
    return vals


def conditions_table(rows):
    """machine_* and run_* fields (and the commit): each with its value, or its values when
    the rows disagree (a results file written by several runs)."""
    keys = sorted({k for r in rows for k in r if k.startswith(("machine_", "run_"))})
    body = []
    for k in ["git_commit"] + keys:
        vals = distinct(rows, k)
        if not vals:
            continue
        shown = " | ".join(fmt_value(v) if not isinstance(v, (dict, list)) or not v
                           else json.dumps(v) for v in vals)
        body.append([esc(k), esc(shown)])
    return table(["field", "value"], body, left=(0, 1)) if body else None


def models_table(rows, colors):
    body = []
    target = {}
    for k in ("target_spec", "target_format", "target_parameters", "target_sha256"):
        vals = distinct(rows, k)
        target[k] = " | ".join(fmt_value(v) for v in vals)
    if any(target.values()):
        body.append(["target", esc(target["target_spec"]), esc(target["target_format"]),
                     esc(target["target_parameters"]), esc(target["target_sha256"][:16])])
    for d in sorted(colors):
        r = next(x for x in rows if drafter_of(x) == d)
        body.append([swatch(colors[d]) + esc(d), esc(fmt_value(r.get("draft_spec",
                                                                     r.get("drafter_spec", "")))),
                     esc(fmt_value(r.get("draft_format", ""))),
                     esc(fmt_value(r.get("draft_parameters", ""))),
                     esc(str(r.get("draft_sha256", ""))[:16])])
    return table(["role", "spec", "format", "parameters", "sha256 (first 16)"], body,
                 left=(0, 1, 2, 4))


# ---------------------------------------------------------------------------------------------
# The page


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def summary_lines(measured, colors):
    out = []
    with_s = [r for r in measured if num(r, "speedup") is not None]
    if with_s:
        b = max(with_s, key=lambda r: num(r, "speedup"))
        out.append("Best measured speedup: <b>%s</b> (%s, gamma %s, temperature %s)."
                   % (interval(num(b, "speedup"), num(b, "speedup_ci_lo"), num(b, "speedup_ci_hi")),
                      swatch(colors[drafter_of(b)]) + esc(drafter_of(b)),
                      esc(fmt_value(b.get("gamma"))), esc(fmt_value(b.get("temperature")))))
    errs = [prediction_error(r) for r in with_s if prediction_error(r) is not None]
    if errs:
        kinds = sorted({FIELD_LABELS.get(field_key(r, "predicted"), "") for r in with_s
                        if field_key(r, "predicted")})
        out.append("Prediction (%s): mean |error| %.1f%% over %d cells, worst %+.1f%%."
                   % (esc(", ".join(kinds)), 100 * sum(abs(e) for e in errs) / len(errs),
                      len(errs), 100 * max(errs, key=abs)))
    flagged = [r for r in measured if flags_of(r)]
    if flagged:
        out.append('<span class="flag">%d of %d cells carry sanity flags (see the cells '
                   'table).</span>' % (len(flagged), len(measured)))
    return out


def machine_line(rows):
    def values(k):
        return " | ".join(fmt_value(v) for v in distinct(rows, k))

    parts = [values("machine_cpu_model")] + [
        "%s %s" % (values(k), label) for k, label in (
            ("machine_cores", "cores"), ("machine_threads", "threads"),
            ("machine_memory_gb", "GB memory"), ("machine_mem_read_gbps", "GB/s memory read"))
        if distinct(rows, k)]
    return ", ".join(p for p in parts if p)


def render(results_dir, rows, written, notes, predictions, now=None):
    """The page as one string."""
    measured = [r for r in rows if not is_cost_only(r)]
    colors = drafter_colors(rows)
    text, where = config_text(results_dir, rows)
    header = header_comment(text)
    resolved = resolved_config(results_dir)
    names = sorted({str(r.get("experiment")) for r in rows if r.get("experiment") is not None})
    title = ", ".join(names) if names else os.path.basename(os.path.abspath(results_dir))
    question = question_of(header, resolved, rows)
    results_path = os.path.join(results_dir, "results.jsonl")
    commits = distinct(rows, "git_commit")
    now = now if now is not None else datetime.datetime.now(datetime.timezone.utc).timestamp()

    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         "<title>speclab: %s</title>" % esc(title), "<style>%s</style></head><body>" % STYLE,
         "<h1>speclab report: %s</h1>" % esc(title)]
    h.append("<blockquote>%s</blockquote>" % esc(question) if question else
             '<p class="muted">No question found (no `# Question:` header in the config).</p>')
    meta = [("results", "%d rows in results.jsonl (%d measured cells%s)" % (
        len(rows), len(measured), (", %d cost-only" % (len(rows) - len(measured)))
        if len(rows) > len(measured) else "")),
        ("results written", utc(os.path.getmtime(results_path))
         if os.path.exists(results_path) else ""),
        ("report written", utc(now)),
        ("commit", ", ".join(str(c) for c in commits)),
        ("config", "%s (hash %s)" % (where or ", ".join(str(x) for x in distinct(rows, "config_file")),
                                     ", ".join(str(x) for x in distinct(rows, "config_hash")))),
        ("machine", machine_line(rows))]
    h.append('<dl class="meta">' + "".join("<dt>%s</dt><dd>%s</dd>" % (esc(k), esc(v))
                                           for k, v in meta if v) + "</dl>")
    lines = summary_lines(measured, colors)
    if lines:
        h += ["<h2>Summary</h2>", "<ul>" + "".join("<li>%s</li>" % l for l in lines) + "</ul>"]

    h.append("<h2>Figures</h2>")
    n_fig = 0
    for name in [n for n in FIGURE_ORDER if n in written] + [n for n in written
                                                             if n not in FIGURE_ORDER]:
        svg = inline_svg(os.path.join(results_dir, "plots", name + ".svg"), "f%d" % n_fig)
        if svg is None:
            continue
        n_fig += 1
        h.append('<figure id="%s"><h3>Figure %d. %s</h3>%s<figcaption>%s</figcaption></figure>'
                 % (esc(name), n_fig, esc(TITLES.get(name, name)), svg,
                    esc(CAPTIONS.get(name, ""))))
    if not n_fig:
        h.append("<p>No figures.</p>")
    if notes:
        h.append("<p>Not plotted:</p><ul>%s</ul>" % "".join("<li>%s</li>" % esc(n) for n in notes))

    h.append("<h2>Tables</h2>")
    if measured:
        h += ["<h3>Cells</h3>", cells_table(measured, colors)]
    best = best_gamma_table(measured, predictions, colors)
    if best:
        h += ["<h3>Best gamma per group: predicted vs measured</h3>", best]
    h += ["<h3>Models</h3>", models_table(rows, colors)]
    cond = conditions_table(rows)
    if cond:
        h += ["<h3>Machine and run conditions</h3>", cond]

    h.append("<h2>Config</h2>")
    if header:
        h.append("<h3>Header comment</h3><pre>%s</pre>" % esc("\n".join(header)))
    if resolved is not None:
        h.append("<h3>Resolved (overrides and defaults applied)</h3><pre>%s</pre>"
                 % esc(json.dumps(resolved, indent=2, sort_keys=False)))
    else:
        h.append('<p class="muted">No config.resolved.json beside the results (a run by an '
                 'older speclab); the file as written follows.</p>')
    if text is not None:
        h.append("<h3>As written (%s)</h3><pre>%s</pre>" % (esc(where), esc(text)))
    h.append('<hr><p class="muted">Made by analysis/plot_results.py from %s. Figures are '
             'inline SVG; the same figures are in plots/ as PNG and SVG.</p>'
             % esc(os.path.basename(results_path)))
    h.append("</body></html>")
    return "\n".join(h) + "\n"


def write_report(results_dir, rows, written, notes, predictions):
    path = os.path.join(results_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(render(results_dir, rows, written, notes, predictions))
    os.replace(tmp, path)
    return path
