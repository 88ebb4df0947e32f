#!/usr/bin/env python3
"""Copy the C++ engine's alpha measurements from `speclab run` result rows into the zoo.

Reads results/<experiment>/results.jsonl written by `speclab run configs/zoo-alpha.yaml`
(or configs/smollm2-distill-alpha.yaml) and writes, for every drafter that is a model
directory under models/zoo or a file in one (a GGUF), <that directory>/alpha_speclab.json: per temperature the row's
`alpha_beta` (Corollary 3.6: the mean over tested drafted positions of
beta = sum_x min(p(x), q(x)), p/q the standardized target/draft distributions given the
target-generated prefix), `alpha_empirical` (accepted / tested), the counts and
tokens per round and, when the row's samples carry prompt categories, the same per
category (`by_category`: accepted / tested, tokens per round, speedup with a baseline).
write_cards.py and distill_smollm2_draft.py card render them; --note (e.g. when it ran and
the machine's load) is kept as `run_note`.

Reproduce:
  build/bin/speclab run configs/zoo-alpha.yaml --no-plots
  python models/train/collect_speclab_alpha.py results/zoo-alpha/results.jsonl \
      --command "speclab run configs/zoo-alpha.yaml --no-plots"
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def by_category(samples):
    """Per prompt category (the samples' `category`): accepted / tested, tokens per round and,
    with a baseline, the speedup (baseline s per token / speculative s per token), each a ratio of
    sums over the category's prompts; in the order the categories first appear."""
    out = {}
    for s in samples:
        c = out.setdefault(s.get("category", "uncategorized"),
                           {"prompts": 0, "tested": 0, "accepted": 0, "rounds": 0, "emitted": 0,
                            "baseline_s": 0.0, "baseline_tokens": 0, "spec_s": 0.0, "spec_tokens": 0})
        c["prompts"] += 1
        for k in ("tested", "accepted", "rounds", "emitted", "baseline_s", "baseline_tokens", "spec_s",
                  "spec_tokens"):
            c[k] += s.get(k, 0) or 0
    res = {}
    for name, c in out.items():
        r = {"prompts": c["prompts"], "tested": c["tested"], "accepted": c["accepted"],
             "alpha_empirical": round(c["accepted"] / c["tested"], 4) if c["tested"] else None,
             "tokens_per_round": round(c["emitted"] / c["rounds"], 3) if c["rounds"] else None}
        if c["baseline_tokens"] and c["spec_tokens"] and c["spec_s"] > 0:
            r["speedup"] = round((c["baseline_s"] / c["baseline_tokens"]) / (c["spec_s"] / c["spec_tokens"]), 3)
        res[name] = r
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.jsonl of a speclab run")
    ap.add_argument("--command", required=True, help="the exact command that produced it (recorded)")
    ap.add_argument("--note", default="", help="when and under what load it ran (recorded as run_note)")
    ap.add_argument("--outside-zoo", action="store_true",
                    help="also drafters that are model directories outside models/zoo (an export kept in "
                         "~/.cache, never committed): alpha_speclab.json is written into that directory")
    args = ap.parse_args()
    rows = [json.loads(l) for l in open(args.results, encoding="utf-8") if l.strip()]
    out = {}
    for r in rows:
        spec = r.get("draft_spec", "")
        d = os.path.join(REPO, spec)
        if spec.startswith("models/zoo/") and os.path.isfile(d):
            d = os.path.dirname(d)  # a model file (GGUF): its directory holds the card
        if not (spec.startswith("models/zoo/") or args.outside_zoo) or not os.path.isdir(d):
            continue
        target = r.get("target_spec") or ""
        home = os.path.expanduser("~")
        if target.startswith(home + os.sep):
            target = "~" + target[len(home):]
        rec = out.setdefault(d, {
            "method": "speclab (C++) `speclab run`: alpha = alpha_beta, the mean over tested drafted "
                      "positions of beta = sum_x min(p, q) (Corollary 3.6) along target-generated text; "
                      "alpha_empirical = accepted / tested",
            "command": args.command, "config": r.get("config_file"), "git_commit": r.get("git_commit"),
            "target": target, "draft": spec, "n_prompts": r.get("n_prompts"),
            "new_tokens": r.get("max_new_tokens"), "seed": r.get("seed"),
            "draft_format": r.get("draft_format"), "draft_dtypes": r.get("draft_dtypes"),
            "draft_sha256": r.get("draft_sha256"), "by_temperature": {}})
        if args.note:
            rec["run_note"] = args.note
        key = f"T={r['temperature']:g}"
        t = {"gamma": r.get("gamma"), "alpha_beta": round(r["alpha_beta"], 4),
             "alpha_empirical": round(r["alpha_empirical"], 4), "alpha_se": round(r["alpha_se"], 4),
             "tested": r["tested"], "accepted": r["accepted"], "rounds": r["rounds"],
             "tokens": r["tokens_spec"], "tokens_per_round": round(r["tau"], 3)}
        if "greedy_outputs_match" in r:
            t["greedy_outputs_match"] = r["greedy_outputs_match"]
        cats = by_category(r.get("samples") or [])
        if cats:
            t["by_category"] = cats
        rec["by_temperature"][key] = t
    if not out:
        print("no zoo drafters in", args.results, file=sys.stderr)
        return 2
    for d, rec in out.items():
        with open(os.path.join(d, "alpha_speclab.json"), "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
        print("wrote", os.path.join(d, "alpha_speclab.json"),
              {k: v["alpha_beta"] for k, v in rec["by_temperature"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
