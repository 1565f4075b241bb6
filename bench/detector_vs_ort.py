#!/usr/bin/env python3
"""qcc against ONNX Runtime on ppocr-det-v3 (PP-OCRv3's DBNet text detector, dynamic N/H/W):
speed of fp32 and int8 at batch 1 (640x640 and 320x320 inputs) and batch 32 (320x320), on 1 and
2 threads. A detector has no labels, so there is no accuracy column here (tests/bars measures
the int8 map against fp32 on text lines; docs/benchmarks.md's ppocr-det-v3 section).

- ORT fp32 runs an opset-13 copy of the model (ORT's per-channel QDQ needs opset 13); ORT int8
  is `quant_pre_process` + `quantize_static` of that copy with compare-ort's u8 configuration
  (QDQ, per-channel QInt8 weights, QUInt8 activations, MinMax), ORT's CPU provider,
  intra_op_num_threads = T.
- qcc fp32 is `qcc bench MODEL` (the fused fp32 evaluator); qcc int8 `qcc calibrate` then
  `qcc compile --int8 --per-channel --calib-method minmax --shape x=N,3,S,S`, one plan per size.
- Both calibrate on the same 64 photos resized to SxS (RGB/255, then (x-0.5)/0.5), which give
  every activation its range; the timings do not depend on the scales. ORT's side runs through
  bench/ort_side.py, as compare-ort's does.
Every timing is the median of --repeats rounds (compare-ort's, 5 by default), each a fresh
process per program reporting the median of its runs on seeded random inputs, the four programs
in turn; ratios are medians of the per-round ratios.

    .venv/bin/python bench/detector_vs_ort.py [--quick]    (prints the table)
Also run by bench/compare-ort (--models ppocr-det-v3), which puts the table in
docs/benchmarks.md.
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import REPO, run_checked, standalone_main  # noqa: E402
from calib_vs_ort import cpu_name  # noqa: E402
import ort_side  # noqa: E402

PROG = "detector_vs_ort"
MODEL = "ppocr-det-v3"
CALIB_IMAGES = 64
# (batch, side): a detector's batch-1 latency at two input sizes, and batch-32 throughput.
CONFIGS = [(1, 640), (1, 320), (32, 320)]
COLUMNS = ["ORT fp32", "ORT int8 u8", "qcc fp32", "qcc int8"]
PRE = ["--scale", "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"]


def qcc_median(out):
    fields = dict(f.split("=") for f in out.splitlines()[-1].split()[1:])
    return float(fields["median_ms"])


def run(qcc, shared, work, quick=False, repeats=None):
    """Returns the results dict (see markdown())."""
    repeats = repeats or (1 if quick else 5)
    os.makedirs(work, exist_ok=True)
    model = os.path.join(shared, "models", MODEL, "model.onnx")
    data = os.path.join(shared, "data", "imagenet-val-sample")
    py = sys.executable
    ort = [py, os.path.join(REPO, "bench", "ort_side.py")]
    # ORT's side: the opset-13 copy and quant_pre_process, then quantize_static per input size
    # on the photos qcc calibrates on (the first 64 in qcc's order, ort_side's preprocessing).
    prepared = json.loads(run_checked([*ort, "prepare", "--model", model, "--work", work,
                                       "--spec", "{}"]))
    calib = os.path.join(work, "calib.txt")
    with open(calib, "w") as f:
        f.write("\n".join(os.path.join(data, p) for p in
                          ort_side.list_images(data)[:CALIB_IMAGES]))
    sides = sorted({s for _, s in CONFIGS})
    ort_u8, plans = {}, {}
    for side in sides:
        pre = ["--resize", f"{side}x{side}", *PRE]
        ort_u8[side] = os.path.join(work, f"ort.u8.{side}.onnx")
        run_checked([*ort, "quantize", "--model", prepared["pre"], "--out", ort_u8[side],
                     "--list", calib, "--samples", str(CALIB_IMAGES), "--method", "minmax",
                     "--act", "u8", "--pre", json.dumps(pre)])
        shape = ["--shape", f"x=N,3,{side},{side}"]
        table = os.path.join(work, f"qcc.{side}.calib.json")
        run_checked([qcc, "calibrate", model, data, "--max-samples", str(CALIB_IMAGES), *pre,
                     *shape, "-o", table])
        plans[side] = os.path.join(work, f"qcc.{side}.plan")
        run_checked([qcc, "compile", model, "--int8", "--per-channel", "--calib", table,
                     "--calib-method", "minmax", *shape, "-o", plans[side]])
    rows = []
    for batch, side in CONFIGS:
        warmup, iters = ((1, 3) if quick else (3, 20)) if batch == 1 else ((1, 2) if quick
                                                                          else (1, 5))
        for threads in (1, 2):
            times = {name: [] for name in COLUMNS}
            for _ in range(repeats):
                for name, m in (("ORT fp32", prepared["fp32"]), ("ORT int8 u8", ort_u8[side])):
                    out = json.loads(run_checked(
                        [*ort, "time", "--model", m, "--threads", str(threads), "--batches",
                         json.dumps([batch]), "--shape", json.dumps([1, 3, side, side]),
                         "--iters", json.dumps({str(batch): [warmup, iters]})]))
                    times[name].append(out[str(batch)])
                bench = ["--batch", str(batch), "--threads", str(threads), "--warmup",
                         str(warmup), "--iters", str(iters)]
                times["qcc fp32"].append(qcc_median(run_checked(
                    [qcc, "bench", model, "--shape", f"x={batch},3,{side},{side}", *bench])))
                times["qcc int8"].append(qcc_median(run_checked(
                    [qcc, "bench", plans[side], *bench])))

            def paired(a, b):
                return statistics.median(x / y for x, y in zip(times[a], times[b]))

            row = {"batch": batch, "side": side, "threads": threads,
                   "ratios": {"fp32": paired("qcc fp32", "ORT fp32"),
                              "int8": paired("qcc int8", "ORT int8 u8"),
                              "int8_fp32": paired("qcc int8", "qcc fp32")}}
            row.update({name: statistics.median(t) for name, t in times.items()})
            rows.append(row)
            print(f"[{PROG}] batch {batch} {side}x{side} threads {threads}: "
                  + ", ".join(f"{k} {row[k]:.2f} ms" for k in COLUMNS), file=sys.stderr)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    return {"model": MODEL, "rows": rows,
            "timing": f"median of {repeats} rounds of fresh processes, each the median of its "
                      "runs (batch 1: 20, batch 32: 5)",
            "machine": f"{cpu_name()}, {os.cpu_count()} CPUs, qcc commit {commit}, "
                       f"{time.strftime('%Y-%m-%d')}"}


def markdown(r):
    out = [f"## Detector: {r['model']}", "",
           f"Measured by `bench/compare-ort --models {r['model']}` (bench/detector_vs_ort.py) on "
           f"{r.get('machine', 'this machine')}: ms per batch on seeded random inputs ("
           + r["timing"] + "). ORT int8 is `quantize_static` u8 (QDQ, per-channel weights, "
           "MinMax) of an opset-13 copy; qcc int8 `qcc compile --int8 --per-channel "
           "--calib-method minmax` at the input size; both calibrated on the same 64 photos. "
           "Ratios are medians of the per-round ratios; below 1 qcc is faster.", "",
           "| batch | input | threads | " + " | ".join(COLUMNS)
           + " | qcc/ORT fp32 | qcc/ORT int8 | qcc int8 / fp32 |",
           "|---" * (len(COLUMNS) + 6) + "|"]
    for row in r["rows"]:
        q = row["ratios"]
        out.append(f"| {row['batch']} | {row['side']}x{row['side']} | {row['threads']} | "
                   + " | ".join(f"{row[c]:.2f}" for c in COLUMNS)
                   + f" | {q['fp32']:.2f} | {q['int8']:.2f} | {q['int8_fp32']:.2f} |")
    return "\n".join(out) + "\n"


def main():
    standalone_main(__doc__.splitlines()[0], run, markdown, "detector-vs-ort",
                    "one round, fewer runs")


if __name__ == "__main__":
    main()
