#!/usr/bin/env python3
"""qcc's int8 plan against qcc fp32, ONNX Runtime fp32 and ONNX Runtime's int8 QDQ model.

The issue's speed bar: the int8 plan of resnet20-cifar10 at batch 32 on 2 threads is at least
1.5x faster than qcc's fp32 evaluator; the script also prints its ratio against ONNX Runtime's
int8 QDQ model of the same network on the same machine and thread count.

qcc side: `qcc calibrate --calib-method minmax` on the first N images, `qcc compile --int8
--per-channel`, then `qcc bench` on the ONNX model (fp32) and on the plan (int8). ONNX Runtime side:
`quant_pre_process` (ONNX shape inference and ORT's basic optimisations, which fold the
BatchNormalizations into the Convs; no symbolic shape inference, which needs sympy), then
`quantize_static` (QDQ, per-channel QInt8 weights, MinMax, the same N images preprocessed like
qcc; activations QInt8 and/or QUInt8, see --ort-activations). Every timing runs in a fresh
process; ORT sessions use intra_op_num_threads=T, inter_op_num_threads=1, sequential execution,
default graph optimisations and seeded random inputs, median of --iters runs after --warmup,
as in fp32_vs_ort.py. Exits 1 when qcc's int8 plan cannot be built or run, or misses the bar.

    .venv/bin/python bench/int8_vs_ort.py [--build build] [--threads 2] [--skip-qcc]
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".bmp")
ACTIVATIONS = ("int8", "uint8")
PROG = "int8_vs_ort"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def list_images(data_dir):
    """Every image path under data_dir, in sorted relative-path order (qcc's order)."""
    found = []
    for root, _, files in os.walk(data_dir):
        for name in files:
            if name.lower().endswith(IMAGE_EXTENSIONS):
                found.append(os.path.relpath(os.path.join(root, name), data_dir))
    found.sort()
    return found


def run_child(argv, env=None):
    """Runs this script as a child (a fresh process); returns its last JSON line as a dict."""
    cmd = [sys.executable, os.path.abspath(__file__)] + argv
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{PROG}: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


# ---- qcc side -----------------------------------------------------------------------------------


class QccError(Exception):
    """A qcc step failed; the message says which command and why."""


def run_qcc(cmd):
    """Runs one qcc command; raises QccError with its command line and stderr tail on failure."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        raise QccError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {tail}")
    return proc.stdout


def qcc_bench(qcc, model, batch, threads, warmup, iters):
    """`qcc bench MODEL|PLAN`; returns its median latency in ms (from its last `bench:` line)."""
    cmd = [qcc, "bench", model, "--batch", str(batch), "--threads", str(threads),
           "--warmup", str(warmup), "--iters", str(iters)]
    lines = [l for l in run_qcc(cmd).splitlines() if l.startswith("bench:")]
    if not lines:
        raise QccError(f"no 'bench:' line in the output of `{' '.join(cmd)}`")
    fields = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    if int(fields["batch"]) != batch:
        raise QccError(f"`{' '.join(cmd)}` ran batch {fields['batch']}, not {batch}")
    return float(fields["median_ms"])


def qcc_build_plan(qcc, model, data, work, args):
    """`qcc calibrate` + `qcc compile --int8 --per-channel`; returns the plan's path."""
    table = os.path.join(work, "qcc.calib.json")
    plan = os.path.join(work, "qcc.int8.plan")
    run_qcc([qcc, "calibrate", model, data, "-o", table, "--resize", str(args.resize),
             "--crop", str(args.crop), "--scale", args.scale, "--mean", args.mean,
             "--std", args.std, "--max-samples", str(args.samples), "--calib-method",
             "minmax"])
    run_qcc([qcc, "compile", model, "--int8", "--calib", table, "--per-channel", "--batch",
             f"1:{args.batch}", "-o", plan])
    if not os.path.exists(plan):
        raise QccError(f"qcc compile wrote no {plan}")
    return plan


# ---- child side: ONNX Runtime in its own process ----------------------------------------------


def load_image(path, args):
    """JPEG -> RGB, short side to --resize (bilinear), centre crop, *scale, (x-mean)/std, CHW."""
    import numpy as np  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    mean = np.array([float(v) for v in args.mean.split(",")], np.float32)
    std = np.array([float(v) for v in args.std.split(",")], np.float32)
    image = Image.open(path).convert("RGB")
    w, h = image.size
    if min(w, h) != args.resize:
        f = args.resize / min(w, h)
        image = image.resize((max(1, round(w * f)), max(1, round(h * f))), Image.BILINEAR)
        w, h = image.size
    left, top = (w - args.crop) // 2, (h - args.crop) // 2
    image = image.crop((left, top, left + args.crop, top + args.crop))
    x = np.asarray(image, dtype=np.float32) * np.float32(float(args.scale))
    return ((x - mean) / std).transpose(2, 0, 1)


def session(path, threads):
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def child_quantize(args):
    """quant_pre_process + quantize_static to args.out; checks it against fp32 on real images.

    Prints {"qlinear_conv", "conv", "agree", "acc_fp32", "acc_int8", "images"} as JSON.
    """
    import collections  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415
    from onnxruntime.quantization import (  # noqa: PLC0415
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quant_pre_process,
        quantize_static)

    model = os.path.join(args.shared, "models", args.model, "model.onnx")
    data = os.path.join(args.shared, "data", args.data)
    images = list_images(data)
    calib = [os.path.join(data, p) for p in images[:args.samples]]
    source = model
    if args.preprocess:
        source = args.out + ".pre.onnx"
        quant_pre_process(model, source, skip_symbolic_shape=True)
    graph = onnx.load(source, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    input_name = next(i.name for i in graph.input if i.name not in initializers)

    class Reader(CalibrationDataReader):
        """The first --samples images in sorted order, 50 per get_next."""

        def __init__(self):
            self.next = 0

        def get_next(self):
            if self.next >= len(calib):
                return None
            chunk = calib[self.next:self.next + 50]
            self.next += len(chunk)
            return {input_name: np.stack([load_image(p, args) for p in chunk])}

    activation = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}[args.act]
    quantize_static(source, args.out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=activation, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)

    # What ORT makes of the QDQ model: how many Convs run as QLinearConv after its fusions.
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.log_severity_level = 3
    options.optimized_model_filepath = args.out + ".ort-optimized.onnx"
    ort.InferenceSession(args.out, options, providers=["CPUExecutionProvider"])
    ops = collections.Counter(
        n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)

    # Sanity: --check-images images spread evenly over the sorted list (every class), labelled by
    # their class folder's position among the sorted folders.
    step = max(1, len(images) // args.check_images)
    picked = images[::step][:args.check_images]
    classes = sorted({p.split(os.sep)[0] for p in images})
    labels = np.array([classes.index(p.split(os.sep)[0]) for p in picked])
    x = np.stack([load_image(os.path.join(data, p), args) for p in picked])
    top1 = {}
    for name, path in (("fp32", model), ("int8", args.out)):
        s = session(path, args.threads)
        top1[name] = np.concatenate([s.run(None, {input_name: x[i:i + 50]})[0].argmax(1)
                                     for i in range(0, len(x), 50)])
    print(json.dumps({
        "qlinear_conv": ops["QLinearConv"], "conv": ops["Conv"] + ops["QLinearConv"],
        "agree": float((top1["fp32"] == top1["int8"]).mean()),
        "acc_fp32": float((top1["fp32"] == labels).mean()),
        "acc_int8": float((top1["int8"] == labels).mean()), "images": len(picked)}))


def child_time(args):
    """Median (and p90) ms of one ORT session over --iters runs after --warmup; prints JSON."""
    import statistics  # noqa: PLC0415
    import time  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from fp32_vs_ort import ort_inputs  # noqa: PLC0415 (same seeded inputs as fp32_vs_ort)

    feeds = ort_inputs(os.path.join(args.shared, "models", args.model, "model.onnx"),
                       args.batch, args.seed)
    s = session(args.onnx, args.threads)
    for _ in range(args.warmup):
        s.run(None, feeds)
    times = []
    for _ in range(args.iters):
        start = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times),
                      "p90_ms": float(np.percentile(times, 90))}))


# ---- parent side --------------------------------------------------------------------------------


def common_child_args(args):
    return ["--shared", args.shared, "--model", args.model, "--data", args.data,
            "--batch", str(args.batch), "--seed", str(args.seed), "--samples", str(args.samples),
            "--resize", str(args.resize), "--crop", str(args.crop), "--scale", args.scale,
            "--mean", args.mean, "--std", args.std]


def child_env(threads):
    """numpy's own BLAS pool held to the session's thread count (unless already set)."""
    env = dict(os.environ)
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(key, str(threads))
    return env


def ort_ms(args, onnx_path, threads):
    return run_child(["--child", "time", "--onnx", onnx_path, "--threads", str(threads),
                      "--warmup", str(args.warmup), "--iters", str(args.iters)]
                     + common_child_args(args), child_env(threads))["median_ms"]


def fmt(value, width, digits):
    return f"{value:>{width}.{digits}f}" if value is not None else f"{'n/a':>{width}}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("QCC_BUILD_DIR", "build"),
                        help="qcc build folder (default $QCC_BUILD_DIR or build)")
    parser.add_argument("--shared", default=os.environ.get("QCC_SHARED_DIR",
                                                           os.path.join(REPO, "..", "shared")))
    parser.add_argument("--model", default="resnet20-cifar10",
                        help="a folder of shared/models holding model.onnx")
    parser.add_argument("--data", default="cifar10-test", help="a folder of shared/data")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=500, help="calibration images")
    parser.add_argument("--check-images", type=int, default=200,
                        help="images for the ORT int8-vs-fp32 top-1 sanity check")
    parser.add_argument("--ort-activations", nargs="+", choices=ACTIVATIONS,
                        default=list(ACTIVATIONS),
                        help="activation types of ORT's QDQ models (weights are always QInt8)")
    parser.add_argument("--no-preprocess", dest="preprocess", action="store_false",
                        help="quantize the model as it is, without quant_pre_process")
    parser.add_argument("--bar", type=float, default=1.5,
                        help="the least qcc int8 speed-up over qcc fp32 (exit 1 below it)")
    parser.add_argument("--workdir", help="keep the table, plan and ORT models here "
                        "(default: a temporary folder)")
    parser.add_argument("--skip-qcc", action="store_true", help="time ONNX Runtime alone")
    parser.add_argument("--resize", type=int, default=32)
    parser.add_argument("--crop", type=int, default=32)
    parser.add_argument("--scale", default="0.00392156862745098")
    parser.add_argument("--mean", default="0.485,0.456,0.406")
    parser.add_argument("--std", default="0.229,0.224,0.225")
    parser.add_argument("--child", choices=("quantize", "time"), help=argparse.SUPPRESS)
    parser.add_argument("--act", choices=ACTIVATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "quantize":
        args.threads = args.threads[0]
        return child_quantize(args)
    if args.child == "time":
        args.threads = args.threads[0]
        return child_time(args)

    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    qcc = os.path.join(build, "bin", "qcc")
    model = os.path.join(args.shared, "models", args.model, "model.onnx")
    data = os.path.join(args.shared, "data", args.data)
    for path in [model, data] + ([] if args.skip_qcc else [qcc]):
        if not os.path.exists(path):
            sys.exit(f"{PROG}: {path} not found (run scripts/setup; set --build/--shared)")
    if len(list_images(data)) < max(args.samples, args.check_images):
        sys.exit(f"{PROG}: {data} holds fewer than {max(args.samples, args.check_images)} images")

    import onnxruntime  # noqa: PLC0415

    version = "qcc not run"
    if not args.skip_qcc:
        out = subprocess.run([qcc, "--version"], capture_output=True, text=True).stdout
        version = "; ".join(l.strip() for l in out.splitlines() if l.strip()) or "qcc"
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO")) or k == "QCC_BUILD_DIR"}
    print(f"# {cpu_name()}, {os.cpu_count()} CPUs; {version}; onnxruntime "
          f"{onnxruntime.__version__}; warmup {args.warmup}, iters {args.iters}, seed {args.seed}")
    print("# environment: " + (" ".join(f"{k}={v}" for k, v in sorted(env.items()))
                               or "(none set)"))
    print(f"# calibration: first {args.samples} images of {args.data} (sorted), MinMax; ORT: "
          f"{'quant_pre_process, then ' if args.preprocess else ''}quantize_static QDQ, "
          "per-channel QInt8 weights")

    with tempfile.TemporaryDirectory(prefix=f"{PROG}.") as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        ort_models = {}
        for act in args.ort_activations:
            path = os.path.join(work, f"ort.qdq.{act}.onnx")
            info = run_child(["--child", "quantize", "--act", act, "--out", path, "--threads",
                              str(args.threads[0]), "--check-images", str(args.check_images)]
                             + common_child_args(args) + ([] if args.preprocess
                                                          else ["--no-preprocess"]),
                             child_env(args.threads[0]))
            ort_models[act] = path
            print(f"# ORT {act} activations: {info['qlinear_conv']} of {info['conv']} Conv run "
                  f"as QLinearConv after ORT's fusions; on {info['images']} images top-1 "
                  f"agreement with fp32 {100 * info['agree']:.1f}%, accuracy fp32 "
                  f"{100 * info['acc_fp32']:.1f}% int8 {100 * info['acc_int8']:.1f}%",
                  flush=True)

        plan, qcc_error = None, None
        if args.skip_qcc:
            qcc_error = "qcc skipped (--skip-qcc)"
        else:
            try:
                plan = qcc_build_plan(qcc, model, data, work, args)
            except QccError as e:
                qcc_error = f"qcc int8 plan: {e}"

        header = (f"{'model':<18} {'batch':>5} {'threads':>7} {'qcc fp32':>9} {'qcc int8':>9} "
                  f"{'ORT fp32':>9}")
        header += "".join(f" {'ORT ' + a:>10}" for a in args.ort_activations)
        header += f" {'int8/fp32':>9}"
        header += "".join(f" {'qcc/' + a:>10}" for a in args.ort_activations)
        print("# ms are medians; int8/fp32: qcc fp32 ms / qcc int8 ms (the speed-up); "
              "qcc/ORT: qcc int8 ms / ORT int8 ms (below 1: qcc faster)")
        print(header, flush=True)
        speedups = []
        for threads in args.threads:
            q32 = q8 = None
            if not args.skip_qcc:
                try:
                    q32 = qcc_bench(qcc, model, args.batch, threads, args.warmup, args.iters)
                except QccError as e:
                    sys.exit(f"{PROG}: qcc fp32: {e}")
                if plan:
                    try:
                        q8 = qcc_bench(qcc, plan, args.batch, threads, args.warmup, args.iters)
                    except QccError as e:
                        qcc_error = f"qcc int8 bench: {e}"
            o32 = ort_ms(args, model, threads)
            o8 = {a: ort_ms(args, ort_models[a], threads) for a in args.ort_activations}
            speedup = q32 / q8 if q32 and q8 else None
            if speedup is not None:
                speedups.append((threads, speedup))
            row = (f"{args.model:<18} {args.batch:>5} {threads:>7} {fmt(q32, 9, 3)} "
                   f"{fmt(q8, 9, 3)} {fmt(o32, 9, 3)}")
            row += "".join(f" {fmt(o8[a], 10, 3)}" for a in args.ort_activations)
            row += f" {fmt(speedup, 9, 2)}"
            row += "".join(f" {fmt(q8 / o8[a] if q8 else None, 10, 2)}"
                           for a in args.ort_activations)
            print(row, flush=True)

    if qcc_error:
        print(f"# {qcc_error}")
        if not args.skip_qcc:
            sys.exit(f"{PROG}: no qcc int8 timing (see above)")
    missed = [f"{t} threads: {s:.2f}x" for t, s in speedups if s < args.bar]
    if missed:
        sys.exit(f"{PROG}: qcc int8 is less than {args.bar}x faster than qcc fp32 at "
                 + ", ".join(missed))


if __name__ == "__main__":
    main()
