#!/usr/bin/env python3
"""Copy the C++ engine's alpha measurements from `speclab run` result rows into the zoo.

Reads results/<experiment>/results.jsonl written by `speclab run configs/zoo-alpha.yaml`
(or configs/zoo-alpha-smollm2.yaml) and writes, for every drafter that is a model
directory under models/zoo, <draft>/alpha_speclab.json: per temperature the row's
`alpha_beta` (Corollary 3.6: the mean over tested drafted positions of
beta = sum_x min(p(x), q(x)), p/q the standardized target/draft distributions given the
target-generated prefix), `alpha_empirical` (accepted / tested), the counts and
tokens per round. write_cards.py and train_smollm2_draft.py --card-only render them.

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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="results.jsonl of a speclab run")
    ap.add_argument("--command", required=True, help="the exact command that produced it (recorded)")
    args = ap.parse_args()
    rows = [json.loads(l) for l in open(args.results, encoding="utf-8") if l.strip()]
    out = {}
    for r in rows:
        spec = r.get("draft_spec", "")
        d = os.path.join(REPO, spec)
        if not spec.startswith("models/zoo/") or not os.path.isdir(d):
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
            "new_tokens": r.get("max_new_tokens"), "seed": r.get("seed"), "by_temperature": {}})
        key = f"T={r['temperature']:g}"
        t = {"gamma": r.get("gamma"), "alpha_beta": round(r["alpha_beta"], 4),
             "alpha_empirical": round(r["alpha_empirical"], 4), "alpha_se": round(r["alpha_se"], 4),
             "tested": r["tested"], "accepted": r["accepted"], "rounds": r["rounds"],
             "tokens": r["tokens_spec"], "tokens_per_round": round(r["tau"], 3)}
        if "greedy_outputs_match" in r:
            t["greedy_outputs_match"] = r["greedy_outputs_match"]
        rec["by_temperature"][key] = t
    if not out:
        print("no zoo drafters in", args.results, file=sys.stderr)
        return 2
    for d, rec in out.items():
        with open(os.path.join(d, "alpha_speclab.json"), "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
        print("wrote", os.path.relpath(os.path.join(d, "alpha_speclab.json"), REPO),
              {k: v["alpha_beta"] for k, v in rec["by_temperature"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
