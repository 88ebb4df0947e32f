"""Reading speclab result rows and the fields the plots and the report use.

One home for: reading RESULTS_DIR/results.jsonl (and predictions.jsonl), numeric field access
that tolerates missing or malformed values, the field names that changed over time (a new name
is preferred, the older one is the fallback), the drafter colours shared by every figure, and
the Wilson interval for acceptance counts.
"""

import json
import math
import os
import sys

PROG = "plot_results"

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
    "tree",
]

# A quantity -> the row keys that carry it, newest name first.
#   predicted     the speedup prediction: out of sample (`speclab predict`'s cost and
#                 acceptance profiles) when the row has it, else the refined in-run one
#   thm38         Leviathan et al. 2023 Theorem 3.8 with the run's alpha and c
#   alpha_pair    the pair's acceptance alpha = E[sum min(p, q)] (profile, else Corollary 3.6
#                 from the run's own p and q)
FIELDS = {
    "predicted": ("predicted_speedup", "predicted_speedup_refined"),
    "thm38": ("thm38_speedup", "predicted_speedup_thm38"),
    "alpha_pair": ("alpha_profile", "alpha_beta"),
    "alpha_pair_ci_lo": ("alpha_profile_ci_lo",),
    "alpha_pair_ci_hi": ("alpha_profile_ci_hi",),
    "profile_by_position": ("acceptance_profile_by_position",),
}

FIELD_LABELS = {
    "predicted_speedup": "predicted (out of sample)",
    "predicted_speedup_refined": "predicted (refined, in-run costs)",
    "thm38_speedup": "Theorem 3.8",
    "predicted_speedup_thm38": "Theorem 3.8",
    "alpha_profile": "alpha (profile)",
    "alpha_beta": "alpha (Cor. 3.6)",
}

# matplotlib's tab10, by hand so the HTML tables colour drafters as the figures do.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


class BadInput(Exception):
    pass


def die(msg, code):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


def read_jsonl(path):
    """The complete JSON-object lines of `path`; text after the last newline (a row torn by a
    killed run) is ignored with a warning, as speclab's own reader does."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput("%s: cannot open results file: %s" % (path, e.strerror or e))
    complete = data[: data.rfind(b"\n") + 1]
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


def read_rows(results_dir):
    if not os.path.isdir(results_dir):
        raise BadInput("%s: not a directory (expected a results directory)" % results_dir)
    return read_jsonl(os.path.join(results_dir, "results.jsonl"))


def read_predictions(results_dir):
    """RESULTS_DIR/predictions.jsonl (`speclab predict`), or [] when there is none."""
    path = os.path.join(results_dir, "predictions.jsonl")
    return read_jsonl(path) if os.path.isfile(path) else []


def merge_predictions(rows, predictions):
    """Gives each row without an out-of-sample prediction the one predictions.jsonl holds for
    its cell_id (in memory only; results.jsonl is not touched)."""
    by_cell = {p.get("cell_id"): p for p in predictions if num(p, "predicted_speedup") is not None}
    for r in rows:
        p = by_cell.get(r.get("cell_id"))
        if p is not None and num(r, "predicted_speedup") is None:
            r["predicted_speedup"] = p["predicted_speedup"]
            if num(r, "speedup"):
                r["prediction_error"] = p["predicted_speedup"] / r["speedup"] - 1


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


def field_key(row, quantity):
    """The first key of FIELDS[quantity] that `row` has a number (or list) under, else None."""
    for k in FIELDS[quantity]:
        v = row.get(k)
        if isinstance(v, list) or num(row, k) is not None:
            return k
    return None


def field(row, quantity):
    k = field_key(row, quantity)
    return num(row, k) if k else None


def field_list(row, quantity):
    k = field_key(row, quantity)
    return num_list(row, k) if k else None


def prediction_error(row):
    """predicted / measured - 1, as the row has it or computed from its two speedups."""
    if field_key(row, "predicted") == "predicted_speedup" and num(row, "prediction_error") is not None:
        return num(row, "prediction_error")
    p, s = field(row, "predicted"), num(row, "speedup")
    return p / s - 1 if p is not None and s else None


def flags_of(row):
    f = row.get("flags")
    if isinstance(f, list):
        return [str(x) for x in f]
    return [str(f)] if isinstance(f, str) and f else []


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


def same_temp(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def drafter_colors(rows):
    """drafter name -> colour, by sorted name: the same drafter has the same colour in every
    figure and table of a report."""
    names = sorted({drafter_of(r) for r in rows})
    return {d: PALETTE[i % len(PALETTE)] for i, d in enumerate(names)}


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


def temperatures(rows):
    return sorted({temp_of(r) for r in rows}, key=lambda t: (math.isnan(t), t))


def is_cost_only(row):
    return isinstance(row.get("predicted_grid"), list)


def wilson(successes, n, z=1.96):
    """Wilson score interval (lo, hi) for a binomial proportion; (None, None) when n == 0."""
    if not n:
        return None, None
    p = successes / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)
