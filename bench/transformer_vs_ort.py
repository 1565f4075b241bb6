#!/usr/bin/env python3
"""qcc against ONNX Runtime on minilm-l6-v2 (a BERT sentence-embedding encoder): speed at batch
8 x 128 tokens on 1 and 2 threads, and retrieval accuracy on the 1,000 shared manual-page pairs.

- ORT fp32 runs the model; ORT int8 is `quantize_dynamic` of the same file (its default: QInt8
  weights per tensor, activations quantized at run time; ORT fuses it into
  DynamicQuantizeMatMul), both on ORT's CPU execution provider with intra_op_num_threads = T.
- qcc fp32 is `qcc compile --fp32`, qcc static int8 `qcc calibrate` (first 500 token files) then
  `qcc compile --int8` with default flags, qcc dynamic `qcc compile --int8 --dynamic`; timed with
  `qcc bench --batch 8 --threads T`.
Every timing is the median of the rounds (--repeats: compare-ort's, 5 by default, also when run
alone; 1 with --quick); a round runs each of the five once, in turn, as a fresh process that reports the median of its timed runs, on the first 8 token files
(qcc bench: seeded 0/1 ids, which cost the same). The ratios are medians of the per-round ratios,
so that a slow spell of the machine (this 2-core VM's second core is sometimes busy: 2-thread
times then rise by a third for every program) falls on both sides of a ratio. Accuracy is `qcc compare
--pairs` for qcc and numpy on ORT's embeddings for ORT.

    .venv/bin/python bench/transformer_vs_ort.py [--quick]    (prints the table)
Also run by bench/compare-ort (--models minilm-l6-v2), which puts the table in docs/benchmarks.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import run_checked, standalone_main  # noqa: E402
from calib_vs_ort import cpu_name  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = "transformer_vs_ort"
MODEL = "minilm-l6-v2"
BATCH = 8


# ---- The ORT side, one step per process (`ort quantize|time|embed ...`). ----

def load_tokens(tokens, first, count):
    import numpy as np  # noqa: PLC0415

    feeds = {}
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        folder = os.path.join(tokens, name)
        files = sorted(os.listdir(folder))[first:first + count]
        feeds[name] = np.concatenate([np.load(os.path.join(folder, f)) for f in files])
    return feeds


def session(model, threads):
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def ort_main(argv):
    import time  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    p = argparse.ArgumentParser(prog=f"{PROG} ort")
    p.add_argument("step", choices=["quantize", "time", "embed"])
    p.add_argument("--model", required=True)
    p.add_argument("--out")
    p.add_argument("--tokens")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    a = p.parse_args(argv)
    if a.step == "quantize":
        from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415

        quantize_dynamic(a.model, a.out, weight_type=QuantType.QInt8)
        print(json.dumps({"model": a.out}))
    elif a.step == "time":
        s = session(a.model, a.threads)
        feeds = load_tokens(a.tokens, 0, BATCH)
        for _ in range(a.warmup):
            s.run(None, feeds)
        times = []
        for _ in range(a.iters):
            start = time.perf_counter()
            s.run(None, feeds)
            times.append(1000 * (time.perf_counter() - start))
        print(json.dumps({"median_ms": statistics.median(times)}))
    else:  # embed every token file; recall@1 of query 2i -> document 2i+1
        s = session(a.model, a.threads)
        count = len(os.listdir(os.path.join(a.tokens, "input_ids")))
        rows = []
        for first in range(0, count, 32):
            rows.append(s.run(None, load_tokens(a.tokens, first, min(32, count - first)))[0])
        e = np.concatenate(rows)
        np.save(a.out, e)
        print(json.dumps({"rows": len(e)}))


def recall(queries, docs):
    import numpy as np  # noqa: PLC0415

    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    d = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    return float(np.mean(np.argmax(q @ d.T, axis=1) == np.arange(len(q))))


# ---- The benchmark. ----

def run(qcc, shared, work, quick=False, repeats=None):
    """Returns the results dict (see markdown())."""
    import numpy as np  # noqa: PLC0415

    repeats = repeats or (1 if quick else 5)
    warmup, iters = (1, 3) if quick else (3, 10)
    os.makedirs(work, exist_ok=True)
    model = os.path.join(shared, "models", MODEL, "model.onnx")
    tokens = os.path.join(shared, "data", "manpage-pairs", "tokens")
    pairs = os.path.join(shared, "data", "manpage-pairs", "pairs.json")
    py = sys.executable
    me = os.path.abspath(__file__)
    ort_dyn = os.path.join(work, "minilm.ort-dynamic.onnx")
    run_checked([py, me, "ort", "quantize", "--model", model, "--out", ort_dyn])
    table = os.path.join(work, "minilm.calib.json")
    run_checked([qcc, "calibrate", model, tokens, "--max-samples", "500", "-o", table])
    plans = {"qcc fp32": (os.path.join(work, "minilm.fp32.plan"), ["--fp32"]),
             "qcc int8 static": (os.path.join(work, "minilm.static.plan"),
                                 ["--int8", "--calib", table]),
             "qcc int8 dynamic": (os.path.join(work, "minilm.dynamic.plan"),
                                  ["--int8", "--dynamic"])}
    for plan, flags in plans.values():
        run_checked([qcc, "compile", model, *flags, "-o", plan])
    rows = []
    for threads in (1, 2):
        # Rounds: each runs the five once, in turn, so that a slow spell of this shared machine
        # (its second core is sometimes busy) falls on every configuration of a round alike; the
        # ratios are medians of the per-round ratios.
        times = {name: [] for name in COLUMNS}
        for _ in range(repeats):
            for name, m in (("ORT fp32", model), ("ORT int8 quantize_dynamic", ort_dyn)):
                times[name].append(json.loads(run_checked(
                    [py, me, "ort", "time", "--model", m, "--tokens", tokens, "--threads",
                     str(threads), "--warmup", str(warmup), "--iters", str(iters)]))["median_ms"])
            for name, (plan, _) in plans.items():
                out = run_checked([qcc, "bench", plan, "--batch", str(BATCH), "--threads",
                                   str(threads), "--warmup", str(warmup), "--iters", str(iters)])
                fields = dict(f.split("=") for f in out.splitlines()[-1].split()[1:])
                times[name].append(float(fields["median_ms"]))
        row = {"threads": threads}
        row.update({name: statistics.median(t) for name, t in times.items()})

        def paired(a, b):
            return statistics.median(x / y for x, y in zip(times[a], times[b]))

        row["ratios"] = {"static_fp32": paired("qcc int8 static", "qcc fp32"),
                         "static_ort": paired("qcc int8 static", "ORT int8 quantize_dynamic"),
                         "dynamic_ort": paired("qcc int8 dynamic", "ORT int8 quantize_dynamic"),
                         "rounds": {name: [round(x, 1) for x in t] for name, t in times.items()}}
        rows.append(row)
        print(f"[{PROG}] threads {threads}: "
              + ", ".join(f"{k} {row[k]:.1f} ms" for k in COLUMNS),
              file=sys.stderr)
    accuracy = {}
    if not quick:
        for name, m in (("ORT fp32", model), ("ORT int8 quantize_dynamic", ort_dyn)):
            npy = os.path.join(work, name.replace(" ", "_") + ".npy")
            run_checked([py, me, "ort", "embed", "--model", m, "--tokens", tokens, "--threads",
                         "2", "--out", npy])
            e = np.load(npy)
            accuracy[name] = {"recall1": recall(e[0::2], e[1::2])}
        ref = np.load(os.path.join(work, "ORT_fp32.npy"))
        dyn = np.load(os.path.join(work, "ORT_int8_quantize_dynamic.npy"))
        accuracy["ORT int8 quantize_dynamic"]["cosine"] = float(np.mean(
            np.sum(ref * dyn, 1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(dyn, axis=1)))
        for name in ("qcc int8 static", "qcc int8 dynamic"):
            out = run_checked([qcc, "compare", model, plans[name][0], tokens, "--pairs", pairs])
            f = {k: float(v) for k, v in (x.split("=") for x in out.splitlines()[-1].split()[1:])}
            accuracy["qcc fp32"] = {"recall1": f["fp32_recall1"]}
            accuracy[name] = {"recall1": f["plan_recall1"], "cosine": f["cosine"]}
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    machine = f"{cpu_name()}, {os.cpu_count()} CPUs, qcc commit {commit}, {time.strftime('%Y-%m-%d')}"
    return {"model": MODEL, "batch": BATCH, "tokens": 128, "rows": rows, "accuracy": accuracy,
            "timing": f"median of {repeats} rounds of fresh processes, each the median of {iters} "
                      "runs; a round runs the five in turn",
            "machine": machine}


COLUMNS = ["ORT fp32", "ORT int8 quantize_dynamic", "qcc fp32", "qcc int8 static",
           "qcc int8 dynamic"]


def markdown(r):
    out = [f"## Transformers: {r['model']} at batch {r['batch']} x {r['tokens']} tokens", "",
           f"Measured by `bench/compare-ort --models {r['model']}` (bench/transformer_vs_ort.py) "
           f"on {r.get('machine', 'this machine')}. ms per batch (" + r["timing"] + "); ratios: "
           "qcc static against qcc fp32, and each qcc int8 plan against ORT's quantize_dynamic "
           "model of the same file, medians of the per-round ratios.", "",
           "| threads | " + " | ".join(COLUMNS) + " | static / qcc fp32 | static / ORT int8 | "
           "dynamic / ORT int8 |",
           "|---" * (len(COLUMNS) + 4) + "|"]
    for row in r["rows"]:
        s, d = row["qcc int8 static"], row["qcc int8 dynamic"]
        o, f = row["ORT int8 quantize_dynamic"], row["qcc fp32"]
        ratios = row.get("ratios") or {"static_fp32": s / f, "static_ort": s / o,
                                        "dynamic_ort": d / o}
        sf = ratios["static_fp32"]
        out.append(f"| {row['threads']} | " + " | ".join(f"{row[c]:.1f}" for c in COLUMNS)
                   + f" | {sf:.2f} ({1 / sf:.2f}x faster) | {ratios['static_ort']:.2f} | "
                   f"{ratios['dynamic_ort']:.2f} |")
    rounds = [(row["threads"], row["ratios"]["rounds"]) for row in r["rows"]
              if "rounds" in row.get("ratios", {})]
    if rounds:
        # This VM's second core is sometimes busy: 2-thread times jump by a third for whichever
        # program runs then. The rounds show it; a ratio of two programs is fair only within one
        # spell.
        out += ["", "Every round (ms, in order), to show this VM's slow spells:", ""]
        for threads, by_name in rounds:
            out.append(f"- {threads} thread{'s' if threads > 1 else ''}: " + "; ".join(
                f"{name} {', '.join(f'{x:.1f}' for x in by_name[name])}" for name in COLUMNS
                if name in by_name))
    if r["accuracy"]:
        out += ["", "Retrieval on the 1,000 pairs (recall@1 short -> long; mean cosine of the "
                "embeddings to fp32):", "", "| | recall@1 | cosine to fp32 |", "|---|---|---|"]
        for name in COLUMNS:
            a = r["accuracy"].get(name)
            if a:
                cos = f"{a['cosine']:.5f}" if "cosine" in a else "-"
                out.append(f"| {name} | {100 * a['recall1']:.2f}% | {cos} |")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "ort":
        ort_main(sys.argv[2:])
        return
    standalone_main(__doc__.splitlines()[0], run, markdown, "transformer-vs-ort",
                    "one process, 3 runs, no accuracy")


if __name__ == "__main__":
    main()
