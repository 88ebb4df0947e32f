#!/usr/bin/env python3
"""Tests for the HTML report (analysis/report_html.py, written by plot_results.py).

    python3 analysis/test_report_html.py             # the page's content
    python3 analysis/test_report_html.py --chromium  # render it in headless Chromium

Plain asserts; exit 0 when all pass. The fixture tests/data/report-run/ is a real short
`speclab run` of configs/default.yaml (3 drafters x 3 gammas x 2 temperatures).

--chromium renders the report to PNG with `chromium --headless --screenshot` and checks the
image: not blank, and each drafter's colour on screen (so the inline SVG figures were drawn);
a text-only page is the planted wrong case that the same check must reject. Without a
chromium on PATH it exits 77 (ctest: skipped) saying so. SPECLAB_REPORT_SCREENSHOT=FILE
keeps the PNG.
"""

import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SCRIPT = os.path.join(HERE, "plot_results.py")
FIXTURE = os.path.join(os.path.dirname(HERE), "tests", "data", "report-run")
SKIP = 77

from result_rows import PALETTE  # noqa: E402


class Page(html.parser.HTMLParser):
    """Counts of the elements the report must have, and anything that would load from
    outside the file."""

    def __init__(self):
        super().__init__()
        self.counts = {}
        self.external = []
        self.text = []
        self.svg_depth = 0
        self.top_svgs = 0

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag == "svg":
            if self.svg_depth == 0:
                self.top_svgs += 1
            self.svg_depth += 1
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.external.append((tag, k, v))
        if tag in ("script", "link", "iframe", "img", "object"):
            self.external.append((tag, "", ""))

    @staticmethod
    def count_top_svgs(text):
        p = Page()
        p.feed(text)
        return p.top_svgs

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg_depth -= 1

    def handle_data(self, data):
        self.text.append(data)


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.all_text = " ".join(p.text)
    return p


def run(*args):
    p = subprocess.run([sys.executable] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def fixture_rows():
    with open(os.path.join(FIXTURE, "results.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def make_dir(tmp, name, rows=None, extra=None):
    d = os.path.join(tmp, name)
    shutil.copytree(FIXTURE, d)
    if rows is not None:
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
    for fname, text in (extra or {}).items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text)
    return d


def report(d):
    rc, _, err = run(SCRIPT, d)
    assert rc == 0, err
    path = os.path.join(d, "index.html")
    assert os.path.isfile(path), "no index.html: " + err
    return path


def svg_of(d, name):
    with open(os.path.join(d, "plots", name + ".svg"), encoding="utf-8") as f:
        return f.read()


def drafters(rows):
    return sorted({r["drafter"] for r in rows})


# ---------------------------------------------------------------------------------------------
# The page's content


def test_full_report(tmp):
    d = make_dir(tmp, "full")
    page = parse(report(d))
    rows = fixture_rows()
    # Five figures inline (no cost-only rows: no predicted grid), self-contained.
    assert page.top_svgs == 5, page.top_svgs
    assert page.counts.get("figure") == 5, page.counts
    assert not page.external, page.external
    # Tables: cells, best gamma per group, models, machine and run conditions.
    assert page.counts.get("table") == 4, page.counts
    text = page.all_text
    assert "On the tiny zoo, how do speedup and acceptance" in text  # the question
    assert rows[0]["git_commit"] in text
    assert rows[0]["machine_cpu_model"] in text
    assert "report written" in text and "results written" in text and " UTC" in text
    assert '"max_new_tokens": 12' in text  # the resolved config, with the run's --set
    assert "Small enough to run" in text  # the header comment
    assert "predicted (refined, in-run costs)" in text  # today's field names, labelled
    # The cells table has one row per cell (plus the header row).
    cells = text.split("Best gamma per group")[0]
    for dr in drafters(rows):
        assert dr in cells
    # index.md is still written, and links the same plots.
    md = open(os.path.join(d, "index.md")).read()
    assert "](plots/predicted_vs_measured.png)" in md


def test_ids_do_not_collide(tmp):
    d = make_dir(tmp, "ids")
    text = open(report(d), encoding="utf-8").read()
    import re

    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "duplicate ids in the page"
    for ref in re.findall(r'url\(#([^)]+)\)', text):
        assert ref in ids, "dangling reference #" + ref


def test_one_colour_per_drafter(tmp):
    d = make_dir(tmp, "colours")
    report(d)
    names = drafters(fixture_rows())
    colours = {n: PALETTE[i] for i, n in enumerate(names)}
    for fig in ("speedup_vs_gamma", "predicted_vs_measured", "acceptance_by_position"):
        svg = svg_of(d, fig)
        for n in names:
            assert n in svg, (fig, n)  # the legend names every drafter
            assert colours[n] in svg, (fig, n, colours[n])  # in its colour
        # No drafter colour beyond those of the drafters in the run.
        for c in PALETTE[len(names):]:
            assert c not in svg, (fig, c)
    # Shared y-axis across the temperature panels: one set of y tick labels.
    assert svg_of(d, "speedup_vs_gamma").count("speedup over the target alone") == 1
    # The acceptance plot has its interval bands and counts; time breakdown its reference.
    acc = svg_of(d, "acceptance_by_position")
    assert "Wilson" in acc and "n=" in acc
    assert "target alone (baseline) per token" in svg_of(d, "time_breakdown")


def test_colours_stable_when_a_drafter_is_missing_from_a_figure(tmp):
    # draft-0.5m without speedups: left out of the speedup figures, and the others keep the
    # colours they have in the tables and the other figures.
    rows = fixture_rows()
    for r in rows:
        if r["drafter"] == "draft-0.5m":
            for k in ("speedup", "speedup_ci_lo", "speedup_ci_hi"):
                r.pop(k)
    d = make_dir(tmp, "missing", rows)
    report(d)
    names = drafters(rows)
    assert names[0] == "draft-0.5m"
    for fig in ("speedup_vs_gamma", "predicted_vs_measured"):
        svg = svg_of(d, fig)
        assert PALETTE[1] in svg and PALETTE[2] in svg, fig
        assert PALETTE[0] not in svg and "draft-0.5m" not in svg, fig
    assert PALETTE[0] in svg_of(d, "acceptance_by_position")


def test_single_gamma(tmp):
    rows = [r for r in fixture_rows() if r["gamma"] == 2]
    d = make_dir(tmp, "onegamma", rows)
    page = parse(report(d))
    svg = svg_of(d, "speedup_vs_gamma")
    assert "Speedup at one gamma" in svg
    assert "drafter (gamma = 2)" in svg  # drafters on the x axis, not a one-point line
    assert page.top_svgs >= 4
    assert "Best gamma per group" not in page.all_text  # nothing to choose between


def test_new_field_names_and_predictions(tmp):
    rows = fixture_rows()
    for i, r in enumerate(rows):
        r["predicted_speedup"] = r["speedup"] * 1.05
        r["prediction_error"] = 0.05
        r["thm38_speedup"] = r.pop("predicted_speedup_thm38")
        r["alpha_profile"] = 0.61
        r["alpha_profile_ci_lo"], r["alpha_profile_ci_hi"] = 0.55, 0.67
        r["acceptance_profile_by_position"] = [0.7, 0.6, 0.5, 0.4]
        r["flags"] = ["planted-flag"] if i == 0 else []
        r["run_load_avg_1m"] = 1.25
    groups = {}
    for r in rows:
        groups[(r["drafter"], r["temperature"])] = {"drafter": r["drafter"],
                                                     "temperature": r["temperature"],
                                                     "predicted_best_gamma": 4}
    preds = "".join(json.dumps(g) + "\n" for g in groups.values())
    d = make_dir(tmp, "newnames", rows, {"predictions.jsonl": preds})
    page = parse(report(d))
    text = page.all_text
    assert "predicted (out of sample)" in text
    assert "alpha (profile)" in text and "0.61" in text and "[0.55, 0.67]" in text
    assert "planted-flag" in text and "1 of 18 cells carry sanity flags" in text
    assert "run_load_avg_1m" in text and "1.25" in text
    assert "+5.0%" in text  # prediction_error
    assert text.count("predictions.jsonl") == 6  # every group's best gamma from the file
    assert "profile (teacher-forced)" in svg_of(d, "acceptance_by_position")


def test_predictions_by_cell(tmp):
    # predictions.jsonl rows per cell give rows without their own out-of-sample prediction one.
    rows = fixture_rows()
    preds = "".join(json.dumps({"cell_id": r["cell_id"], "predicted_speedup": 0.5}) + "\n"
                    for r in rows)
    d = make_dir(tmp, "bycell", None, {"predictions.jsonl": preds})
    text = parse(report(d)).all_text
    assert "predicted (out of sample)" in text


def test_sparse_rows_still_make_a_page(tmp):
    lines = [{"cell_id": "a"}, {"cell_id": "b", "drafter": "x", "gamma": 2, "speedup": 1.1,
                                "flags": "not-a-list"}]
    d = make_dir(tmp, "sparse", lines)
    os.remove(os.path.join(d, "config.yaml"))
    os.remove(os.path.join(d, "config.resolved.json"))
    page = parse(report(d))
    assert "No config.resolved.json" in page.all_text
    assert not page.external


def test_without_matplotlib(tmp):
    # matplotlib made unimportable (and no rerun under /usr/bin/python3): exit 1, and the
    # report still has its tables and config, and says why it has no figures.
    d = make_dir(tmp, "nompl")
    code = ("import sys; sys.modules['matplotlib'] = None; sys.argv = [%r, %r]; "
            "sys.path.insert(0, %r); exec(compile(open(%r).read(), %r, 'exec'))"
            % (SCRIPT, d, HERE, SCRIPT, SCRIPT))
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, SPECLAB_PLOT_REEXEC="1"))
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "matplotlib" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    page = parse(os.path.join(d, "index.html"))
    assert page.top_svgs == 0 and page.counts.get("table") == 4, (page.top_svgs, page.counts)
    assert "python3 with matplotlib is needed" in page.all_text


def test_bad_predictions_file(tmp):
    d = make_dir(tmp, "badpred", None, {"predictions.jsonl": "{\"cell_id\": \"a\"}\n[1]\n"})
    rc, _, err = run(SCRIPT, d)
    assert rc == 2 and "predictions.jsonl:2:" in err and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------------------------------------
# Headless Chromium


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def screenshot(chromium, page, png, tmp, height=9000):
    args = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
            "--user-data-dir=" + os.path.join(tmp, "profile"), "--window-size=1200,%d" % height,
            "--screenshot=" + png, "file://" + os.path.abspath(page)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=180, env=dict(os.environ, HOME=tmp))
    assert p.returncode == 0 and os.path.isfile(png), (p.returncode, p.stderr[-2000:])


def browser_dom(chromium, page, tmp):
    args = [chromium, "--headless", "--disable-gpu", "--user-data-dir=" +
            os.path.join(tmp, "profile"), "--dump-dom", "file://" + os.path.abspath(page)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=180, env=dict(os.environ, HOME=tmp))
    assert p.returncode == 0 and "</html>" in p.stdout, (p.returncode, p.stderr[-2000:])
    return p.stdout


def load_png(path):
    import matplotlib.image

    img = matplotlib.image.imread(path)  # floats in [0, 1], H x W x 3 or 4
    return img[:, :, :3]


def colour_pixels(img, hex_colour, tol=0.06):
    import numpy

    want = numpy.array([int(hex_colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5)])
    return int((numpy.abs(img - want).max(axis=2) < tol).sum())


def check_rendering(img, names):
    """The screenshot is a page with figures: mostly but not all white, and each drafter's
    colour covering more pixels than the table swatches alone could (a swatch is about 10 x 10
    pixels, one per table row)."""
    import numpy

    nonwhite = float((img.min(axis=2) < 0.97).mean())
    assert 0.02 < nonwhite < 0.9, "blank or solid page: %.3f non-white" % nonwhite
    for i, n in enumerate(names):
        px = colour_pixels(img, PALETTE[i])
        assert px > 2500, "drafter %s colour %s: %d pixels" % (n, PALETTE[i], px)
    return nonwhite, numpy


def test_chromium(tmp):
    chromium = find_chromium()
    if not chromium:
        return "chromium not found on PATH (Debian: apt-get install chromium)"
    d = make_dir(tmp, "render")
    page = report(d)
    # The DOM as Chromium parsed it: the five figures are SVG elements, the four tables tables.
    dom = browser_dom(chromium, page, tmp)
    assert Page.count_top_svgs(dom) == 5 and dom.count("<table") == 4, (
        Page.count_top_svgs(dom), dom.count("<table"))
    png = os.path.join(tmp, "report.png")
    screenshot(chromium, page, png, tmp)
    img = load_png(png)
    assert img.shape[1] == 1200 and img.shape[0] >= 4000, img.shape
    names = drafters(fixture_rows())
    check_rendering(img, names)
    keep = os.environ.get("SPECLAB_REPORT_SCREENSHOT")
    if keep:
        shutil.copy(png, keep)
    # The planted wrong case: the same page without its figures must fail the check.
    bare = os.path.join(tmp, "bare.html")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    import re

    with open(bare, "w", encoding="utf-8") as f:
        f.write(re.sub(r"<svg.*?</svg>", "", text, flags=re.S))
    png2 = os.path.join(tmp, "bare.png")
    screenshot(chromium, bare, png2, tmp)
    try:
        check_rendering(load_png(png2), names)
    except AssertionError:
        return None
    raise AssertionError("a page without figures passed the rendering check")


def main(argv):
    if argv[1:] == ["--chromium"]:
        tests = [test_chromium]
    elif argv[1:]:
        sys.stderr.write("usage: test_report_html.py [--chromium]\n")
        return 2
    else:
        tests = [v for k, v in sorted(globals().items())
                 if k.startswith("test_") and k != "test_chromium" and callable(v)]
    tmp = tempfile.mkdtemp(prefix="speclab-report-")
    failed, skipped = 0, []
    try:
        for t in tests:
            sub = os.path.join(tmp, t.__name__)
            os.makedirs(sub)
            try:
                why = t(sub)
                if why:
                    skipped.append(why)
                    print("skip %s: %s" % (t.__name__, why))
                else:
                    print("ok   %s" % t.__name__)
            except AssertionError as e:
                failed += 1
                print("FAIL %s: %s" % (t.__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d of %d tests passed%s" % (len(tests) - failed - len(skipped), len(tests),
                                       ", %d skipped" % len(skipped) if skipped else ""))
    if failed:
        return 1
    return SKIP if skipped and len(skipped) == len(tests) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
