#!/usr/bin/env python3
"""Parts of scripts/gpu-check that need Python: CPU-against-GPU output checks and the plan
throughput table. Run through scripts/gpu-check (it builds qcc and sets up .venv).

  gpu_check.py outputs --qcc QCC --shared DIR --out DIR
  gpu_check.py bench   --qcc QCC --shared DIR --out DIR
  gpu_check.py isa     --qcc QCC --shared DIR --out DIR
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

CIFAR_PRE = ["--resize", "32", "--crop", "32", "--scale", "0.00392156862745098", "--mean",
             "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"]
# The DATA.md preprocessing of each shared model (as in bench/compare_ort.py).
MODELS = {
    "mnist-8": dict(onnx="mnist-8/model.onnx", data="mnist-test", pre=["--grayscale"],
                    calib=["--shard", "0/10"], compare=["--max-samples", "1000"], batch="1"),
    "resnet20-cifar10": dict(onnx="resnet20-cifar10/model.onnx", data="cifar10-test",
                             pre=CIFAR_PRE, calib=["--shard", "0/10"], compare=[],
                             batch="1:64"),
    "squeezenet1.1": dict(onnx="squeezenet1.1/model-fp16.onnx", data="imagenet-val-sample",
                          pre=["--resize", "256", "--crop", "224", "--channel-order", "bgr",
                               "--mean", "104,117,123"], calib=[], compare=[], batch="1"),
    "ppocr-cls-mbv3": dict(onnx="ppocr-cls-mbv3/model.onnx", data="imagenet-val-sample",
                           pre=["--resize", "192", "--crop", "48x192", "--scale",
                                "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std",
                                "0.5,0.5,0.5"], calib=[], compare=[], batch="1:64",
                           compile=["--shape", "x=N,3,48,192"]),
    "efficientnet-lite0": dict(onnx="efficientnet-lite0/model.onnx", data="imagenet-val-sample",
                               pre=["--resize", "256", "--crop", "224", "--scale",
                                    "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std",
                                    "0.5,0.5,0.5"], calib=[], compare=[], batch="1:64"),
}

failures = []
# The device each side runs on; --gpu-device cpu dry-runs the script on a machine without a GPU
# (every check then compares the CPU with itself).
DEVICE = {"cpu": "cpu", "cuda": "cuda"}


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"gpu-check: command failed ({p.returncode}): {' '.join(cmd)}")
    return p.stdout


def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def plan_inputs(qcc, plan):
    """[(name, dtype, dims)] from `qcc inspect PLAN` ("input NAME: f32[N,3,32,32]")."""
    inputs = []
    for line in run([qcc, "inspect", plan]).splitlines():
        if line.startswith("input ") and ": " in line:
            name, shape = line[len("input "):].split(": ", 1)
            dtype, dims = shape.split("[", 1)
            dims = [1 if d == "N" else int(d) for d in dims.rstrip("]").split(",")]
            inputs.append((name, dtype, dims))
    return inputs


def input_files(qcc, model_dir, plan, work):
    """The model's test inputs when it ships them, else two seeded random inputs."""
    inputs = plan_inputs(qcc, plan)
    sets = []
    for d in sorted(glob.glob(os.path.join(model_dir, "test_data_set_*"))):
        sets.append([f"{name}={os.path.join(d, f'input_{i}.pb')}"
                     for i, (name, _, _) in enumerate(inputs)])
    if not sets:
        rng = np.random.default_rng(0)
        for k in range(2):
            args = []
            for name, dtype, dims in inputs:
                x = rng.standard_normal(dims).astype(np.float16 if dtype == "f16" else np.float32)
                path = os.path.join(work, f"random_{k}_{name}.npy")
                np.save(path, x)
                args.append(f"{name}={path}")
            sets.append(args)
    return sets


def outputs_of(qcc, plan, device, inputs, folder):
    os.makedirs(folder, exist_ok=True)
    cmd = [qcc, "run", plan, "--device", device, "--output-dir", folder]
    for arg in inputs:
        cmd += ["--input", arg]
    run(cmd)
    return [numpy_helper.to_array(onnx.load_tensor(p))
            for p in sorted(glob.glob(os.path.join(folder, "output_*.pb")))]


def difference(a, b):
    """(largest |a - b|, largest |a|) in float64; (0, 0) for empty arrays."""
    if not a.size:
        return 0.0, 0.0
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(np.max(np.abs(a64 - b64))), float(np.max(np.abs(a64)))


def dense_bins(stats):
    """A table tensor's histogram ("hist": runs [start, count, count, ...]) as 2048 counts."""
    bins = [0] * 2048
    for run_ in stats["hist"]:
        for j, c in enumerate(run_[1:]):
            bins[run_[0] + j] = c
    return bins


def compare_line(text):
    return [l for l in text.splitlines() if l.startswith("compare: ")][-1]


def outputs(args):
    for name, m in MODELS.items():
        if args.models and name not in args.models:
            continue
        print(f"\n-- {name}", flush=True)
        try:
            outputs_of_model(args, name, m)
        except (SystemExit, Exception) as e:  # a command failed: go on with the next model
            check(False, f"{name}: {type(e).__name__}: {e}")
    if failures:
        raise SystemExit(f"gpu-check: {len(failures)} check(s) failed: " + "; ".join(failures))


def outputs_of_model(args, name, m):
    model = os.path.join(args.shared, "models", m["onnx"])
    model_dir = os.path.dirname(model)
    data = os.path.join(args.shared, "data", m["data"])
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    limit = [] if m["calib"] else ["--max-samples", "100"]
    tables, seconds = {}, {}
    for device in ("cpu", "cuda"):
        tables[device] = os.path.join(work, f"calib-{device}.json")
        start = time.monotonic()
        run([args.qcc, "calibrate", model, data, *m["pre"], *m["calib"], *limit,
             *m.get("compile", []), "--device", DEVICE[device], "-o", tables[device]])
        seconds[device] = time.monotonic() - start
    print(f"  calibrate wall time: cpu {seconds['cpu']:.2f} s, cuda {seconds['cuda']:.2f} s",
          flush=True)
    # The statistics of a set of values are exact on both devices, but the fp32 values
    # themselves differ in their last bits (cuBLASLt sums in another order): the same
    # tensors and counts, min/max to 1e-4, and at most 0.1% of the values in another bin.
    # An fp16 model's tensors are rounded to fp16 after every op by the CPU evaluator and not
    # by the GPU's fp32 plan: there the tables differ by fp16 rounding grown over the layers
    # (squeezenet1.1 on an H200: 0.67% at the last pool), so the bound is 1% and 2% of the
    # values, and what counts is checked below: the int8 plans built from either table agree.
    graph = onnx.load(model, load_external_data=False).graph
    fp16_model = any(i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
                     for i in graph.input)
    rel_bound, moved_bound = (1e-2, 2e-2) if fp16_model else (1e-4, 1e-3)
    cpu_t, gpu_t = (json.load(open(tables[d]))["tensors"] for d in ("cpu", "cuda"))
    check(cpu_t.keys() == gpu_t.keys(), f"{name}: calibration on cuda observes the same "
                                        f"{len(cpu_t)} tensors as on cpu")
    worst_moved, worst_rel = 0.0, 0.0
    for t in cpu_t.keys() & gpu_t.keys():
        a, b = cpu_t[t], gpu_t[t]
        if any(a[k] != b[k] for k in ("count", "nan", "posinf", "neginf")):
            check(False, f"{name} {t}: equal value, NaN and inf counts (cpu count "
                         f"{a['count']}, cuda {b['count']})")
            continue
        for k in ("min", "max"):
            worst_rel = max(worst_rel, abs(a[k] - b[k]) / max(abs(a[k]), 1e-30))
        moved = (sum(abs(x - y) for x, y in zip(dense_bins(a), dense_bins(b))) / 2
                 if a["range"] == b["range"] else a["count"])
        worst_moved = max(worst_moved, moved / max(a["count"], 1))
    check(worst_rel <= rel_bound and worst_moved <= moved_bound,
          f"{name}: cuda tables match cpu (worst min/max difference {worst_rel:.2g} "
          f"relative, at most {100 * worst_moved:.3g}% of a tensor's values in another bin"
          f"{'; fp16 model' if fp16_model else ''})")
    # The int8 plan from the GPU's table against the one from the CPU's, on real images.
    metrics = {}
    for device in ("cpu", "cuda"):
        plan = os.path.join(work, f"int8-from-{device}-table.plan")
        run([args.qcc, "compile", model, "--int8", "--calib", tables[device],
             *m.get("compile", []), "--batch", m["batch"], "-o", plan])
        line = compare_line(run([args.qcc, "compare", model, plan, data, *m["pre"],
                                 *m["compare"]]))
        metrics[device] = dict(kv.split("=", 1) for kv in line.split()[1:])
        print(f"  int8 plan from the {device} table: {line}")
    # SQNR over every output value is the stable measure; top-1 agreement on a few hundred
    # images moves by whole images (squeezenet1.1: 4 of 200 for plans 0.15 dB apart), so it
    # is shown, not checked.
    a_sqnr, b_sqnr = (float(metrics[d]["sqnr_db"]) for d in ("cpu", "cuda"))
    d_sqnr = 0.0 if a_sqnr == b_sqnr else abs(a_sqnr - b_sqnr)  # inf and inf: 0 apart
    d_agree = abs(float(metrics["cpu"]["agreement"]) - float(metrics["cuda"]["agreement"]))
    check(d_sqnr <= 0.5,
          f"{name}: int8 plans from the cpu and cuda tables agree (SQNR {d_sqnr:.3g} dB apart; "
          f"top-1 agreement {100 * d_agree:.3g} points apart)")
    for precision in ("int8", "fp16"):
        try:
            precision_checks(args, name, m, model, data, work, tables, precision)
        except SystemExit as e:  # a command failed: go on with the next precision
            check(False, f"{name} {precision}: {e}")


def precision_checks(args, name, m, model, data, work, tables, precision):
    model_dir = os.path.dirname(model)
    plan = os.path.join(work, f"{precision}.plan")
    flags = ["--int8", "--calib", tables["cpu"]] if precision == "int8" else ["--fp16"]
    run([args.qcc, "compile", model, *flags, *m.get("compile", []), "--batch", m["batch"],
         "--target", "cuda", "-o", plan])
    for k, inputs in enumerate(input_files(args.qcc, model_dir, plan, work)):
        want = outputs_of(args.qcc, plan, "cpu", inputs, os.path.join(work, f"cpu{k}"))
        got = outputs_of(args.qcc, plan, DEVICE["cuda"], inputs,
                         os.path.join(work, f"gpu{k}"))
        for i, (a, b) in enumerate(zip(want, got)):
            err, scale = difference(a, b)
            if precision == "int8":
                check(a.shape == b.shape and np.array_equal(a, b),
                      f"{name} int8 input set {k} output {i}: bit-exact "
                      f"(max abs diff {err:.3g})")
            else:
                check(a.shape == b.shape and err <= 2e-2 * max(scale, 1e-6),
                      f"{name} fp16 input set {k} output {i}: max abs diff {err:.3g} "
                      f"against max |y| {scale:.3g}")
    lines = {}
    for device in ("cpu", "cuda"):
        lines[device] = compare_line(run(
            [args.qcc, "compare", model, plan, data, *m["pre"], *m["compare"],
             "--device", DEVICE[device]]))
    print(f"  cpu:  {lines['cpu']}\n  cuda: {lines['cuda']}")
    if precision == "int8":
        check(lines["cpu"] == lines["cuda"],
              f"{name} int8: qcc compare on real images identical on cpu and cuda")


def bench(args):
    rows = []
    for name in ("resnet20-cifar10", "squeezenet1.1", "efficientnet-lite0"):
        m = MODELS[name]
        model = os.path.join(args.shared, "models", m["onnx"])
        work = os.path.join(args.out, name)
        os.makedirs(work, exist_ok=True)
        table = os.path.join(work, "calib-cpu.json")
        if not os.path.exists(table):
            limit = [] if m["calib"] else ["--max-samples", "100"]
            try:
                run([args.qcc, "calibrate", model, os.path.join(args.shared, "data", m["data"]),
                     *m["pre"], *m["calib"], *limit, *m.get("compile", []), "--device", "cpu",
                     "-o", table])
            except SystemExit as e:  # go on with the next model
                check(False, f"{name}: {e}")
                continue
        fp32_ms = {}
        for precision in ("fp32", "fp16", "int8"):
            plan = os.path.join(work, f"bench-{precision}.plan")
            flags = ["--int8", "--calib", table] if precision == "int8" else [f"--{precision}"]
            try:
                run([args.qcc, "compile", model, *flags, "--batch", m["batch"], "--target",
                     "cuda", "-o", plan])
            except SystemExit as e:
                check(False, f"{name} {precision}: {e}")
                continue
            for batch in (1, 64):
                if m["batch"] == "1" and batch != 1:
                    rows.append((name, precision, batch, None, None, None))
                    continue
                try:
                    out = run([args.qcc, "bench", plan, "--device", DEVICE["cuda"], "--batch",
                               str(batch), "--warmup", "10", "--iters", "100"])
                except SystemExit as e:
                    check(False, f"{name} {precision} batch {batch}: {e}")
                    continue
                line = [l for l in out.splitlines() if l.startswith("bench: ")][-1]
                f = dict(kv.split("=", 1) for kv in line.split()[1:])
                ms = float(f["median_ms"])
                if precision == "fp32":
                    fp32_ms[batch] = ms
                rows.append((name, precision, batch, ms, float(f["throughput"]),
                             fp32_ms.get(batch, ms) / ms))
    print(f"\n{'model':18} {'plan':5} {'batch':>5} {'median ms':>10} {'samples/s':>10} "
          f"{'vs fp32':>8}")
    for name, precision, batch, ms, tput, speedup in rows:
        if ms is None:
            print(f"{name:18} {precision:5} {batch:>5} {'(fixed batch 1 in the model)':>30}")
        else:
            print(f"{name:18} {precision:5} {batch:>5} {ms:>10.4f} {tput:>10.1f} {speedup:>7.2f}x")
    if failures:
        raise SystemExit(f"gpu-check: {len(failures)} check(s) failed: " + "; ".join(failures))


def cpu_levels():
    """The QCC_CPU_FEATURES levels this host can run, widest last."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    levels = ["baseline"]
    if {"avx2", "fma", "f16c"} <= flags:
        levels.append("avx2")
    if {"avx512f", "avx512bw", "avx512vl"} <= flags:
        levels.append("avx512")
    if "amx_int8" in flags:
        levels.append("vnni")
    if flags & {"avx512_vnni", "avx512_vbmi", "avx512_vbmi2"}:
        levels.append("native")
    return levels


def isa(args):
    """CPU plans of every shared model at each vector level of this host: int8 outputs
    bit-identical to the scalar baseline's (every int8 step is exact integer arithmetic), fp32
    outputs within float rounding of it (the kernels sum in other orders)."""
    levels = cpu_levels()
    print(f"levels: {' '.join(levels)}")
    for name, m in MODELS.items():
        if args.models and name not in args.models:
            continue
        model = os.path.join(args.shared, "models", m["onnx"])
        work = os.path.join(args.out, name)
        os.makedirs(work, exist_ok=True)
        try:
            table = os.path.join(work, "calib-cpu.json")
            if not os.path.exists(table):
                limit = [] if m["calib"] else ["--max-samples", "100"]
                run([args.qcc, "calibrate", model, os.path.join(args.shared, "data", m["data"]),
                     *m["pre"], *m["calib"], *limit, *m.get("compile", []), "--device", "cpu",
                     "-o", table])
            for precision in ("fp32", "int8"):
                plan = os.path.join(work, f"isa-{precision}.plan")
                flags = ["--int8", "--calib", table] if precision == "int8" else ["--fp32"]
                run([args.qcc, "compile", model, *flags, *m.get("compile", []), "--batch",
                     m["batch"], "-o", plan])
                worst = 0.0
                for k, inputs in enumerate(input_files(args.qcc, os.path.dirname(model), plan,
                                                       work)):
                    got = {}
                    for level in levels:
                        os.environ["QCC_CPU_FEATURES"] = level
                        try:
                            got[level] = outputs_of(args.qcc, plan, "cpu", inputs, os.path.join(
                                work, f"isa-{precision}-{level}-{k}"))
                        finally:
                            del os.environ["QCC_CPU_FEATURES"]
                    for level in levels[1:]:
                        for i, (a, b) in enumerate(zip(got["baseline"], got[level])):
                            err, scale = difference(a, b)
                            scale = max(scale, 1e-6)
                            worst = max(worst, err / scale)
                            if precision == "int8":
                                check(a.shape == b.shape and np.array_equal(a, b),
                                      f"{name} int8 input set {k} output {i}: {level} "
                                      f"bit-identical to baseline (max abs diff {err:.3g})")
                            else:
                                check(a.shape == b.shape and err <= 1e-4 * scale,
                                      f"{name} fp32 input set {k} output {i}: {level} within "
                                      f"1e-4 of baseline (max abs diff {err:.3g} against "
                                      f"max |y| {scale:.3g})")
                print(f"-- {name} {precision}: {' '.join(levels[1:])} against baseline, worst "
                      f"difference {worst:.3g} of max |y|", flush=True)
        except SystemExit as e:  # a command failed: go on with the next model
            check(False, f"{name}: {e}")
    if failures:
        raise SystemExit(f"gpu-check: {len(failures)} check(s) failed: " + "; ".join(failures))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["outputs", "bench", "isa"])
    parser.add_argument("--qcc", required=True)
    parser.add_argument("--shared", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="*", choices=list(MODELS), help="default: all")
    parser.add_argument("--gpu-device", default="cuda",
                        help="the device of the GPU side (cpu: a dry run of the script)")
    args = parser.parse_args()
    DEVICE["cuda"] = args.gpu_device
    {"outputs": outputs, "bench": bench, "isa": isa}[args.what](args)


if __name__ == "__main__":
    main()
