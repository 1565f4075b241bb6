#!/usr/bin/env python3
"""qcc plans against ONNX Runtime models on this host's CPU, interleaved, in fresh processes.

For a host the project borrows for minutes (the GPU machines' CPUs, where AVX-512 and VNNI are
found), where bench/compare_ort.py's calibrations and quantizations would not fit: the plans and
the ORT models are made beforehand (bench/compare-ort leaves both in build/compare-ort/MODEL),
and this script only times them. Each pair is timed at every batch and thread count, qcc and ORT
alternating, --reps times; a side's figure is the smallest of its medians (the least disturbed
run). `qcc bench PLAN --batch B --threads T`; ORT through bench/ort_side.py's `time` step
(intra_op_num_threads=T, one inter-op thread, sequential execution, default graph optimisations),
both on seeded random inputs. Prints a table with qcc/ORT time ratios (below 1: qcc is faster).

    python3 bench/plans_vs_ort.py --qcc build/bin/qcc \\
        --pair efficientnet-lite0:int8=QCC.plan,ORT.u8.onnx ... [--batches 1 32] [--threads 1 16]
"""

import argparse
import json
import os
import re
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from calib_vs_ort import cpu_name  # noqa: E402


def iters_of(batch, args):
    return (args.warmup, args.iters) if batch == 1 else (max(1, args.warmup // 2),
                                                        max(3, args.iters // 4))


def qcc_ms(args, plan, batch, threads):
    warmup, iters = iters_of(batch, args)
    p = subprocess.run([args.qcc, "bench", plan, "--batch", str(batch), "--threads",
                        str(threads), "--warmup", str(warmup), "--iters", str(iters)],
                       text=True, capture_output=True)
    m = re.search(r"batch=([0-9]+) .*median_ms=([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:]
    if int(m.group(1)) != batch:  # a plan of fixed batch runs its own
        return None, [f"the plan's batch is fixed at {m.group(1)}"]
    return float(m.group(2)), None


def ort_ms(args, model, batch, threads):
    graph = onnx.load(model, load_external_data=False).graph
    weights = {t.name for t in graph.initializer}  # older exports list them as inputs too
    x = next(i for i in graph.input if i.name not in weights)
    shape = x.type.tensor_type.shape.dim
    if shape and shape[0].HasField("dim_value") and shape[0].dim_value != batch:
        return None, [f"the model's batch is fixed at {shape[0].dim_value}"]
    dims = [d.dim_value if d.HasField("dim_value") else 1 for d in shape]
    warmup, iters = iters_of(batch, args)
    p = subprocess.run([sys.executable, os.path.join(HERE, "ort_side.py"), "time", "--model",
                        model, "--threads", str(threads), "--batches", json.dumps([batch]),
                        "--shape", json.dumps(dims), "--iters",
                        json.dumps({str(batch): [warmup, iters]})],
                       text=True, capture_output=True)
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:]
    return json.loads(p.stdout.strip().splitlines()[-1])[str(batch)], None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qcc", required=True)
    parser.add_argument("--pair", action="append", required=True,
                        help="LABEL=PLAN,ORT_MODEL (repeatable)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count()])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    pairs = []
    for spec in args.pair:
        label, sep, files = spec.partition("=")
        plan, sep2, model = files.partition(",")
        if not sep or not sep2:
            parser.error(f"--pair '{spec}': expected LABEL=PLAN,ORT_MODEL")
        for path in (plan, model):
            if not os.path.exists(path):
                parser.error(f"--pair '{spec}': {path} does not exist")
        pairs.append((label, plan, model))

    print(f"host: {cpu_name()}, {os.cpu_count()} CPUs; reps {args.reps}, min of medians",
          flush=True)
    print(f"| pair | batch | threads | qcc ms | ORT ms | qcc/ORT |\n|---|---|---|---|---|---|",
          flush=True)
    failed = False
    for label, plan, model in pairs:
        for batch in args.batches:
            for threads in args.threads:
                best = {"qcc": None, "ort": None}
                why = None
                for _ in range(args.reps):
                    for side, fn, path in (("qcc", qcc_ms, plan), ("ort", ort_ms, model)):
                        ms, err = fn(args, path, batch, threads)
                        if ms is None:
                            why = why or f"{side}: {' '.join(err)}"
                        elif best[side] is None or ms < best[side]:
                            best[side] = ms
                q, o = best["qcc"], best["ort"]
                if q is None or o is None:
                    print(f"| {label} | {batch} | {threads} | {q or '-'} | {o or '-'} | "
                          f"({why[:120]}) |", flush=True)
                    failed = failed or (q is None and "fixed" not in why)
                    continue
                print(f"| {label} | {batch} | {threads} | {q:.3f} | {o:.3f} | {q / o:.2f} |",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
