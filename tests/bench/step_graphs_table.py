#!/usr/bin/env python3
"""CUDA graphs on against off, from a speclab_bench JSON file (--benchmark_out): one row per
model and k of BM_CudaStepGraphs (step time off and on, their ratio, the weight rate as a
fraction of BM_CudaCopy's rate in the same run, T(k)/T(1) off and on), then the
BM_CudaSpeculativeRound rows of paths 2 (device draft step by step, device verify) and 3 (the
round's draft steps in one chain) with graphs off and on, then BM_CudaStepKernels: each kernel
class's device time per step (us, share, and for the products their weights' rate as a
fraction of the copy rate), the sum against the step timed whole.

    python3 tests/bench/step_graphs_table.py build-device/bench_cuda.json [--before RECORD.json]

--before: an earlier run's bench JSON (a committed device record): the kernels and steps both
runs timed (BF16 products, attention, standardization, one decode step each way) side by side,
now over before, so a change's effect on the chip reads off the first lines of the next run.

The device kit's bench stage prints it (and writes $OUT/graphs.txt). Reads only the JSON;
prints "no BM_CudaStepGraphs rows" when there are none (a run without a device reports its
cases as errors, which are skipped here).
"""
import json
import re
import sys


def args_of(name):
    """{'model': 0, 'graphs': 1, ...} from 'BM_X/model:0/graphs:1/.../manual_time'."""
    return {k: int(v) for k, v in re.findall(r"(\w+):(-?\d+)", name)}


def load_rows(path):
    with open(path) as f:
        return [b for b in json.load(f).get("benchmarks", []) if not b.get("error_occurred")]


# The cases compared with an earlier record: the BF16 products (dtype:2), attention,
# standardization, and the decode step of each model with graphs off and on at 1 token.
BEFORE_PATTERNS = (r"^BM_CudaMatmul/.*/dtype:2/", r"^BM_CudaAttention/", r"^BM_CudaStandardize/",
                   r"^BM_CudaStepGraphs/model:\d/graphs:\d/n_tokens:1/")


def ms(b):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def before_table(rows, before_path):
    before = {b["name"]: b for b in load_rows(before_path)}
    pairs = [(b, before[b["name"]]) for b in rows
             if b["name"] in before and any(re.search(p, b["name"]) for p in BEFORE_PATTERNS)]
    if not pairs:
        print(f"no case in common with {before_path}")
        return
    print(f"against {before_path}:")
    print(f"  {'case':62} {'before ms':>10} {'now ms':>9} {'now/before':>10}")
    for now, old in pairs:
        name = now["name"].replace("/manual_time", "")
        print(f"  {name:62} {ms(old):10.4f} {ms(now):9.4f} {ms(now) / ms(old):10.3f}")


def main(path, before_path=None):
    rows = load_rows(path)
    if before_path:
        before_table(rows, before_path)
    copy = [b["copy_GB/s"] for b in rows if b["name"].startswith("BM_CudaCopy")]
    if copy:
        # BM_CudaCopy's counter is a rate (bytes per second); the step cases' copies of it are
        # already in GB/s.
        rate = copy[0] / 1e9 if copy[0] > 1e6 else copy[0]
        print(f"BM_CudaCopy: {rate:.0f} GB/s (read + written), the ceiling of this run")
    steps = {}
    for b in rows:
        if b["name"].startswith("BM_CudaStepGraphs/"):
            a = args_of(b["name"])
            steps[(a["model"], a["n_tokens"], a["graphs"])] = b
    if not steps:
        print("no BM_CudaStepGraphs rows")
    else:
        names = {0: "1B BF16", 1: "3B BF16"}
        print(f"{'model':8} {'k':>2} {'off ms':>8} {'on ms':>8} {'on/off':>7} "
              f"{'off %copy':>9} {'on %copy':>9} {'T/T1 off':>9} {'T/T1 on':>8} {'wall on ms':>10}")
        for model in (0, 1):
            for k in range(1, 9):
                off, on = steps.get((model, k, 0)), steps.get((model, k, 1))
                if not off or not on:
                    continue
                print(f"{names[model]:8} {k:>2} {off['step_s'] * 1e3:8.3f} {on['step_s'] * 1e3:8.3f} "
                      f"{on['step_s'] / off['step_s']:7.3f} {100 * off['of_copy']:8.1f}% "
                      f"{100 * on['of_copy']:8.1f}% {off['T_over_T1']:9.3f} {on['T_over_T1']:8.3f} "
                      f"{on['wall_s'] * 1e3:10.3f}")
        failures = sum(b.get("graph_failures", 0) for b in steps.values())
        print(f"graph capture failures: {failures:.0f}")
    rounds = [b for b in rows if b["name"].startswith(("BM_CudaSpeculativeRound/path:2/",
                                                         "BM_CudaSpeculativeRound/path:3/"))]
    if rounds:
        print(f"{'round (path 2: steps, 3: chain)':40} {'round ms':>9} {'overhead/T1':>11}")
        for b in rounds:
            a = args_of(b["name"])
            label = (f"path {a['path']} gamma {a['gamma']} T {a['T_pct'] / 100:g} "
                     f"graphs {a.get('graphs', 0)}")
            print(f"{label:40} {b['round_s'] * 1e3:9.3f} {b['overhead_over_T1']:11.3f}")

    kernel_table(rows)


KERNEL_LABELS = ("embedding", "attn_norm", "qkv", "rope_kv", "attention", "wo_add", "ffn_norm",
                 "gate_up", "down_add", "final_norm", "head")


def kernel_table(rows):
    """BM_CudaStepKernels: one block of lines per (model, k)."""
    kernels = [b for b in rows if b["name"].startswith("BM_CudaStepKernels/")]
    if not kernels:
        print("no BM_CudaStepKernels rows")
        return
    names = {0: "1B BF16", 1: "3B BF16"}
    for b in kernels:
        a = args_of(b["name"])
        print(f"{names.get(a['model'], a['model'])} k {a['n_tokens']}: sum {b['sum_us']:.0f} us, "
              f"step alone {b['plain_us']:.0f} us (sum/step {b['sum_over_plain']:.3f})")
        print(f"  {'kernel':11} {'us':>8} {'share':>6} {'GB/s':>7} {'%copy':>6}")
        for label in KERNEL_LABELS:
            if label + "_us" not in b:
                continue
            rate = b.get(label + "_GBps")
            rate_s = f"{rate:7.0f} {100 * b[label + '_of_copy']:5.1f}%" if rate else ""
            print(f"  {label:11} {b[label + '_us']:8.1f} {100 * b[label + '_share']:5.1f}% {rate_s}")


if __name__ == "__main__":
    args = sys.argv[1:]
    before_path = None
    if "--before" in args:
        i = args.index("--before")
        if i + 1 >= len(args):
            sys.exit("step_graphs_table.py: --before needs a bench JSON file")
        before_path = args[i + 1]
        del args[i:i + 2]
    main(args[0] if args else "build-device/bench_cuda.json", before_path)
