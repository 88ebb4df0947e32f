#!/usr/bin/env python3
"""Tests for analysis/plot_results.py (and plot_simulator.py when a speclab binary is at hand).

    python3 analysis/test_plot_results.py

Plain asserts; exit 0 when all pass. Uses the synthetic fixture analysis/testdata/results.jsonl
(rows with the fields experiments/measure/cell_runner.cpp writes: measured cells with and without a
baseline, and cost-only rows with predicted_grid) and analysis/testdata/categories/ (a tiny-zoo
run with two prompt categories: results.jsonl, tables.json and tables.md as `speclab run` wrote
them). Set SPECLAB_BIN to a built speclab to also
test plot_simulator.py (ctest does).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "plot_results.py")
SIM_SCRIPT = os.path.join(HERE, "plot_simulator.py")
FIXTURE = os.path.join(HERE, "testdata")
ALL_PLOTS = ["speedup_vs_gamma", "predicted_vs_measured", "acceptance_by_position",
             "time_breakdown", "predicted_grid", "target_tk_ratio"]


def run(*args):
    p = subprocess.run([sys.executable] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def fixture_dir(tmp, name, lines=None):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if lines is None:
        shutil.copy(os.path.join(FIXTURE, "results.jsonl"), d)
        shutil.copy(os.path.join(FIXTURE, "tables.md"), d)
    else:
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            f.write(lines)
    return d


def fixture_rows():
    with open(os.path.join(FIXTURE, "results.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def assert_plots(d, names):
    for n in names:
        for ext in ("png", "svg"):
            p = os.path.join(d, "plots", "%s.%s" % (n, ext))
            assert os.path.isfile(p) and os.path.getsize(p) > 1000, "missing or empty: " + p
    with open(os.path.join(d, "plots", names[0] + ".png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_full_fixture(tmp):
    d = fixture_dir(tmp, "full")
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert_plots(d, ALL_PLOTS)
    index = open(os.path.join(d, "index.md")).read()
    for n in ALL_PLOTS:
        assert "](plots/%s.png)" % n in index, n
        assert "(plots/%s.svg)" % n in index, n
    assert "## Tables" in index and "| draft-2m | 0.0 | 1 | 1.50 |" in index  # tables.md copied
    assert tmp not in index  # links are relative
    # A second run over the same directory works (replaces its own files).
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err


def test_no_baseline(tmp):
    # Rows from a run without a baseline: no speedup or predictions; no cost-only rows.
    drop = ("speedup", "speedup_ci_lo", "speedup_ci_hi", "predicted_speedup_thm38",
            "predicted_speedup_refined", "error_thm38", "error_refined")
    lines = ""
    for r in fixture_rows():
        if "predicted_grid" in r:
            continue
        for k in drop:
            r.pop(k, None)
        lines += json.dumps(r) + "\n"
    d = fixture_dir(tmp, "nobaseline", lines)
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert_plots(d, ["acceptance_by_position", "time_breakdown", "target_tk_ratio"])
    for n in ("speedup_vs_gamma", "predicted_vs_measured", "predicted_grid"):
        assert not os.path.exists(os.path.join(d, "plots", n + ".png")), n
    index = open(os.path.join(d, "index.md")).read()
    assert "no measured speedups" in index


def test_sparse_rows(tmp):
    # Rows with almost nothing in them, nulls and wrong types: still exit 0.
    lines = "\n".join([
        json.dumps({"cell_id": "a"}),
        json.dumps({"cell_id": "b", "gamma": 2, "speedup": None, "acceptance_by_position": None}),
        json.dumps({"cell_id": "c", "gamma": "x", "speedup": 1.2, "drafter": "d",
                    "temperature": 0, "acceptance_by_position": [0.5, None, "y"]}),
        json.dumps({"cell_id": "d", "predicted_grid": [{"alpha": 0.5}, 3]}),
    ]) + "\n"
    d = fixture_dir(tmp, "sparse", lines)
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert os.path.isfile(os.path.join(d, "index.md"))


def test_speedup_vs_concurrency(tmp):
    # sweep.concurrency rows: the concurrency figure from them; the other figures keep N = 1.
    base = {"drafter": "draft-2m", "temperature": 1.0, "gamma": 2, "tau": 2.0,
            "acceptance_by_position": [0.7, 0.6]}
    rows = [dict(base, cell_id="n1", speedup=0.8, speedup_ci_lo=0.7, speedup_ci_hi=0.9,
                 predicted_speedup=0.85)]
    for n, tput in ((2, 0.9), (4, 1.1), (8, 0.95)):
        rows.append(dict(base, cell_id="n%d" % n, concurrency=n, speedup=tput - 0.05,
                         speedup_ci_lo=tput - 0.1, speedup_ci_hi=tput,
                         throughput_speedup=tput, throughput_speedup_ci_lo=tput - 0.08,
                         throughput_speedup_ci_hi=tput + 0.08,
                         predicted_throughput_speedup=tput + 0.03))
    # A cell without a prediction (an older row) still plots its measurement.
    del rows[2]["predicted_throughput_speedup"]
    d = fixture_dir(tmp, "concurrency", "".join(json.dumps(r) + "\n" for r in rows))
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert_plots(d, ["speedup_vs_concurrency", "speedup_vs_gamma"])
    # Without a concurrency > 1 row there is no such figure.
    d = fixture_dir(tmp, "one-at-a-time", json.dumps(rows[0]) + "\n")
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert not os.path.exists(os.path.join(d, "plots", "speedup_vs_concurrency.png"))


def test_nothing_to_plot(tmp):
    d = fixture_dir(tmp, "empty", "")
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert "nothing to plot" in err, err
    d = fixture_dir(tmp, "useless", json.dumps({"cell_id": "x"}) + "\n")
    rc, _, err = run(SCRIPT, d)
    assert rc == 0 and "nothing to plot" in err, (rc, err)


def test_torn_last_line_ignored(tmp):
    text = open(os.path.join(FIXTURE, "results.jsonl")).read()
    d = fixture_dir(tmp, "torn", text + '{"cell_id": "torn", "gam')
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert "torn" in err


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, "expected one line on stderr, got: %r" % err
    return lines[0]


def test_bad_input(tmp):
    rc, _, err = run(SCRIPT, os.path.join(tmp, "does-not-exist"))
    assert rc == 2, (rc, err)
    assert "does-not-exist" in one_line(err)

    d = os.path.join(tmp, "nofile")
    os.makedirs(d)
    rc, _, err = run(SCRIPT, d)
    assert rc == 2 and "results.jsonl" in one_line(err), (rc, err)

    good = json.dumps({"cell_id": "a", "gamma": 1}) + "\n"
    d = fixture_dir(tmp, "malformed", good + good + "{not json\n" + good)
    rc, _, err = run(SCRIPT, d)
    assert rc == 2, (rc, err)
    line = one_line(err)
    assert "results.jsonl:3:" in line, line

    d = fixture_dir(tmp, "notobject", good + "[1, 2]\n")
    rc, _, err = run(SCRIPT, d)
    assert rc == 2 and "results.jsonl:2:" in one_line(err), (rc, err)

    rc, _, err = run(SCRIPT)
    assert rc == 2, (rc, err)
    one_line(err)


def category_fixture_dir(tmp, name):
    d = os.path.join(tmp, name)
    shutil.copytree(os.path.join(FIXTURE, "categories"), d)
    return d


def test_category_breakdown(tmp):
    # Rows and tables.json of a tiny-zoo run with two prompt categories (continuation, qa),
    # two drafters, T = 0 and 1 (analysis/testdata/categories, written by `speclab run`).
    d = category_fixture_dir(tmp, "categories")
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert_plots(d, ["category_breakdown"])
    index = open(os.path.join(d, "index.md")).read()
    assert "](plots/category_breakdown.png)" in index
    assert "| draft | T | gamma | policy | continuation | qa | overall |" in index
    # What the figure draws is the tables' cells: categories in order, then overall.
    sys.path.insert(0, HERE)
    import plot_results
    tables = plot_results.read_category_tables(d)
    assert sorted(tables) == ["category_acceptance", "category_speedup",
                              "category_tokens_per_round"], sorted(tables)
    acc = tables["category_acceptance"]
    assert acc["columns"][4::4] == ["continuation", "qa", "overall"], acc["columns"]
    rows = [json.loads(l) for l in open(os.path.join(d, "results.jsonl")) if l.strip()]
    for tr in acc["rows"]:
        row = next(r for r in rows if r["drafter"] == tr["draft"] and r["temperature"] == tr["T"])
        assert abs(tr["overall"] - row["alpha_empirical"]) < 1e-9, (tr, row["alpha_empirical"])
        assert tr["qa_n"] == 3 and tr["continuation_n"] == 3, tr
        assert tr["qa_ci_lo"] <= tr["qa"] <= tr["qa_ci_hi"], tr

    # Without tables.json (an older results directory): the other figures, and a note.
    d = category_fixture_dir(tmp, "no-tables-json")
    os.remove(os.path.join(d, "tables.json"))
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    assert not os.path.exists(os.path.join(d, "plots", "category_breakdown.png"))
    assert "category breakdown: no category tables" in open(os.path.join(d, "index.md")).read()

    # A tables.json that is not speclab's: exit 2, one line naming it, no figures.
    d = category_fixture_dir(tmp, "bad-tables-json")
    with open(os.path.join(d, "tables.json"), "w") as f:
        f.write('{"tables": [{"name": "category_speedup"}]}')
    rc, _, err = run(SCRIPT, d)
    assert rc == 2, (rc, err)
    assert "tables.json: not the JSON of `speclab table --format json`" in one_line(err), err
    assert not os.path.exists(os.path.join(d, "plots"))


def test_simulator(tmp):
    speclab = os.environ.get("SPECLAB_BIN")
    if not speclab or not os.access(speclab, os.X_OK):
        print("  (skipped: set SPECLAB_BIN to a built speclab)")
        return
    out = os.path.join(tmp, "sim")
    rc, _, err = run(SIM_SCRIPT, out, "--speclab", speclab)
    assert rc == 0, err
    for n in ("figure2", "figure3", "figure4"):
        for ext in ("png", "svg", "csv"):
            assert os.path.getsize(os.path.join(out, "%s.%s" % (n, ext))) > 100, (n, ext)
    rc, _, err = run(SIM_SCRIPT, out, "--speclab", os.path.join(tmp, "nope"))
    assert rc == 2, (rc, err)


def test_row_field_names_are_declared(tmp):
    """Every row key the scripts read by name is a field of experiments/results/result_row.h (through
    the generated analysis/result_fields.json), a cell key, a rename's old name or a listed
    retired field: a field renamed or dropped in C++ fails here, not silently in a plot."""
    import re
    sys.path.insert(0, HERE)
    import result_rows as rr
    known = (rr.ROW_FIELDS | rr.SAMPLE_FIELDS | rr.CELL_KEYS | rr.GROUP_ROW_KEYS | set(rr.RENAMED)
             | rr.RETIRED)
    pattern = re.compile(r'(?:num|num_list|\.get)\((?:row|r|p|s|sample|x), "([a-z0-9_]+)"')
    unknown = []
    for name in ("result_rows.py", "plot_results.py", "report_html.py"):
        with open(os.path.join(HERE, name)) as f:
            for key in pattern.findall(f.read()):
                if key not in known:
                    unknown.append("%s: %s" % (name, key))
    for quantity, names in rr.FIELDS.items():
        for n in names:
            if n not in known:
                unknown.append("FIELDS[%s]: %s" % (quantity, n))
    assert not unknown, "row keys the C++ declaration does not have: %s" % unknown
    assert "speedup" in rr.ROW_FIELDS and len(rr.ROW_FIELDS) > 100


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_") and callable(v)]
    tmp = tempfile.mkdtemp(prefix="speclab-analysis-")
    failed = 0
    try:
        for t in tests:
            sub = os.path.join(tmp, t.__name__)
            os.makedirs(sub)
            try:
                t(sub)
                print("ok   %s" % t.__name__)
            except AssertionError as e:
                failed += 1
                print("FAIL %s: %s" % (t.__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d of %d tests passed" % (len(tests) - failed, len(tests)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
