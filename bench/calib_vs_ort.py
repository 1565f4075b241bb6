#!/usr/bin/env python3
"""qcc calibrate against ONNX Runtime's quantize_static calibrators: wall time and peak memory.

Calibrates one model on the first N images of a folder (sorted relative paths, recursive) with
`qcc calibrate` and with ONNX Runtime's MinMax and Entropy calibrators, each configuration in a
fresh process, and prints its wall time (measured by this parent, process start included) and
peak RSS (the child's ru_maxrss from wait4). ORT runs two configurations per method: the
calibrator alone (create_calibrator + collect_data + compute_data) and the whole quantize_static
(QDQ, QInt8 activations and weights, its defaults otherwise). Run with the project venv:

    .venv/bin/python bench/calib_vs_ort.py [--build build] [--samples 1000] [--threads 2]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ("minmax", "entropy")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".bmp")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def add_common_args(parser):
    """The flags calib_vs_ort.py and calib_memory.py share (model, data, preprocessing, threads)."""
    parser.add_argument("--build", default=os.environ.get("QCC_BUILD_DIR", "build"),
                        help="qcc build folder (default $QCC_BUILD_DIR or build)")
    parser.add_argument("--shared", default=os.environ.get("QCC_SHARED_DIR",
                                                           os.path.join(REPO, "..", "shared")))
    parser.add_argument("--model", default="resnet20-cifar10",
                        help="a folder of shared/models holding model.onnx")
    parser.add_argument("--data", default="cifar10-test", help="a folder of shared/data")
    parser.add_argument("--batch", type=int, default=50,
                        help="images per run, the same for qcc and ORT's data reader; must "
                        "divide the sample counts for ORT Entropy (default 50)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resize", type=int, default=32)
    parser.add_argument("--crop", type=int, default=32)
    parser.add_argument("--scale", default="0.00392156862745098")
    parser.add_argument("--mean", default="0.485,0.456,0.406")
    parser.add_argument("--std", default="0.229,0.224,0.225")


def check_batch(batch, samples, methods):
    """ORT's Entropy collector stacks every batch's activations with np.asarray, which fails on a
    shorter last batch; exits early rather than mid-run."""
    if "entropy" in methods and samples % batch:
        sys.exit(f"{os.path.basename(sys.argv[0])}: --batch {batch} does not divide {samples} "
                 "samples; ONNX Runtime's Entropy calibrator fails on a shorter last batch")


def resolve_paths(args, need_qcc):
    """Returns (qcc, model, data_dir); exits with a clear message when one is missing."""
    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    qcc = os.path.join(build, "bin", "qcc")
    model = os.path.join(args.shared, "models", args.model, "model.onnx")
    data = os.path.join(args.shared, "data", args.data)
    for path in (model, data):
        if not os.path.exists(path):
            sys.exit(f"{os.path.basename(sys.argv[0])}: {path} not found (set --shared)")
    if need_qcc:
        if not os.path.exists(qcc):
            sys.exit(f"{os.path.basename(sys.argv[0])}: {qcc} not found "
                     "(run scripts/setup or set --build)")
        probe = subprocess.run([qcc, "calibrate", "--help"], capture_output=True, text=True)
        if probe.returncode != 0 or "--calib-method" not in probe.stdout:
            sys.exit(f"{os.path.basename(sys.argv[0])}: {qcc} has no `calibrate` subcommand "
                     "(or it lacks --calib-method); rebuild qcc, or pass --skip-qcc to time "
                     "ONNX Runtime alone")
    return qcc, model, data


def machine_header(qcc, have_qcc, threads):
    """Two comment lines naming the CPU, the versions and the thread-related environment."""
    import onnxruntime  # noqa: PLC0415 (keeps the parent's import cheap when ORT is broken)

    version = "qcc not run"
    if have_qcc:
        out = subprocess.run([qcc, "--version"], capture_output=True, text=True).stdout
        version = "; ".join(l.strip() for l in out.splitlines() if l.strip()) or "qcc"
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO")) or k == "QCC_BUILD_DIR"}
    return (f"# {cpu_name()}, {os.cpu_count()} CPUs; {version}; onnxruntime "
            f"{onnxruntime.__version__}; python {platform.python_version()}; threads {threads}\n"
            "# environment: " + (" ".join(f"{k}={v}" for k, v in sorted(env.items()))
                                 or "(none set)"))


def list_images(data_dir, samples):
    """The first `samples` image paths under data_dir, in sorted relative-path order."""
    found = []
    for root, _, files in os.walk(data_dir):
        for name in files:
            if name.lower().endswith(IMAGE_EXTENSIONS):
                found.append(os.path.relpath(os.path.join(root, name), data_dir))
    found.sort()
    if len(found) < samples:
        sys.exit(f"{data_dir} holds {len(found)} images, fewer than {samples}")
    return [os.path.join(data_dir, p) for p in found[:samples]]


def measure(cmd, env=None):
    """Runs cmd in a fresh process; returns (wall seconds, peak RSS MiB, stdout text).

    Wall time is taken here around process start and exit; peak RSS is the child's ru_maxrss
    (KiB on Linux) as wait4 reports it for that one child.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-4000:]}")
    return wall, usage.ru_maxrss / 1024.0, stdout


def qcc_command(qcc, model, data, table, method, samples, args):
    return [qcc, "calibrate", model, data, "-o", table, "--resize", str(args.resize),
            "--crop", str(args.crop), "--scale", args.scale, "--mean", args.mean,
            "--std", args.std, "--max-samples", str(samples), "--batch", str(args.batch),
            "--calib-method", method, "--threads", str(args.threads)]


def ort_command(mode, model, data, method, samples, args):
    return [sys.executable, os.path.abspath(__file__), "--child", mode, "--shared", args.shared,
            "--model", args.model, "--data", args.data, "--method", method,
            "--samples", str(samples), "--batch", str(args.batch), "--threads", str(args.threads),
            "--resize", str(args.resize), "--crop", str(args.crop), "--scale", args.scale,
            "--mean", args.mean, "--std", args.std]


def ort_env(threads):
    """The child's environment: numpy's own BLAS pool held to the same thread count."""
    env = dict(os.environ)
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(key, str(threads))
    return env


def run_config(tool, method, samples, args, qcc, model, data, tmp):
    """One fresh-process run; returns (wall s, peak RSS MiB, in-process s or None)."""
    if tool == "qcc":
        table = os.path.join(tmp, f"qcc_{method}_{samples}.json")
        wall, rss, _ = measure(qcc_command(qcc, model, data, table, method, samples, args))
        if not os.path.exists(table):
            sys.exit(f"qcc calibrate wrote no {table}")
        return wall, rss, None
    mode = "calib" if tool == "ORT calibrator" else "quantize_static"
    wall, rss, stdout = measure(ort_command(mode, model, data, method, samples, args),
                                ort_env(args.threads))
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    return wall, rss, json.loads(lines[-1])["seconds"] if lines else None


def run_repeated(tool, method, samples, args, qcc, model, data, tmp):
    """Medians over args.repeats runs of (wall s, peak RSS MiB, in-process s or None)."""
    runs = [run_config(tool, method, samples, args, qcc, model, data, tmp)
            for _ in range(args.repeats)]
    inner = [r[2] for r in runs if r[2] is not None]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            statistics.median(inner) if inner else None)


# ---- child side: ONNX Runtime in its own process ----------------------------------------------


def child_main(args):
    """Runs one ORT configuration and prints {"seconds": in-process time} as its last line."""
    import numpy as np  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    from onnxruntime.quantization import (  # noqa: PLC0415
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, create_calibrator,
        quantize_static)
    from onnxruntime.quantization import calibrate as ort_calibrate  # noqa: PLC0415
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    start = time.perf_counter()
    model_path = os.path.join(args.shared, "models", args.model, "model.onnx")
    paths = list_images(os.path.join(args.shared, "data", args.data), args.samples)
    mean = np.array([float(v) for v in args.mean.split(",")], np.float32)
    std = np.array([float(v) for v in args.std.split(",")], np.float32)
    scale = np.float32(float(args.scale))
    graph = onnx.load(model_path, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    input_name = next(i.name for i in graph.input if i.name not in initializers)

    # ORT's calibrator builds its InferenceSession with default SessionOptions (one thread per
    # core) and exposes no thread setting; rebuild it the same way, threads pinned to T.
    def create_inference_session(self):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        self.infer_session = onnxruntime.InferenceSession(
            self.augmented_model_path, sess_options=options, providers=self.execution_providers)

    ort_calibrate.CalibraterBase.create_inference_session = create_inference_session

    def load(path):
        """JPEG -> RGB, short side to --resize (bilinear), centre crop, *scale, (x-mean)/std, CHW"""
        image = Image.open(path).convert("RGB")
        w, h = image.size
        if min(w, h) != args.resize:
            f = args.resize / min(w, h)
            image = image.resize((max(1, round(w * f)), max(1, round(h * f))), Image.BILINEAR)
            w, h = image.size
        left, top = (w - args.crop) // 2, (h - args.crop) // 2
        image = image.crop((left, top, left + args.crop, top + args.crop))
        x = np.asarray(image, dtype=np.float32) * scale
        return ((x - mean) / std).transpose(2, 0, 1)

    class Reader(CalibrationDataReader):
        """Decodes lazily, `--batch` images per get_next (the last batch may be shorter)."""

        def __init__(self):
            self.next = 0

        def get_next(self):
            if self.next >= len(paths):
                return None
            chunk = paths[self.next:self.next + args.batch]
            self.next += len(chunk)
            return {input_name: np.ascontiguousarray(np.stack([load(p) for p in chunk]))}

        def __len__(self):
            return len(paths)

    method = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy}[args.method]
    with tempfile.TemporaryDirectory(prefix="calib_vs_ort.") as tmp:
        if args.child == "calib":
            # The op types quantize_static calibrates when none are given.
            op_types = list(set(QLinearOpsRegistry.keys()) | set(QDQRegistry.keys()))
            calibrator = create_calibrator(
                model_path, op_types, augmented_model_path=os.path.join(tmp, "augmented.onnx"),
                calibrate_method=method)
            calibrator.collect_data(Reader())
            ranges = calibrator.compute_data()
            count = len(ranges.data)
        else:
            quantize_static(model_path, os.path.join(tmp, "model.qdq.onnx"), Reader(),
                            quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                            weight_type=QuantType.QInt8, calibrate_method=method)
            count = sum(1 for n in onnx.load(os.path.join(tmp, "model.qdq.onnx")).graph.node
                        if n.op_type == "QuantizeLinear")
    print(json.dumps({"seconds": time.perf_counter() - start, "count": count}))


# ---- parent side --------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; medians are shown")
    parser.add_argument("--skip-qcc", action="store_true",
                        help="time ONNX Runtime alone (while qcc has no calibrate)")
    parser.add_argument("--child", choices=("calib", "quantize_static"), help=argparse.SUPPRESS)
    parser.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return

    check_batch(args.batch, args.samples, args.methods)
    qcc, model, data = resolve_paths(args, need_qcc=not args.skip_qcc)
    list_images(data, args.samples)  # fail early on a short folder
    print(machine_header(qcc, not args.skip_qcc, args.threads))
    print(f"# {args.model} on the first {args.samples} images of {args.data}, batch "
          f"{args.batch}, repeats {args.repeats} (medians); ORT: session threads "
          f"{args.threads}, default calibrator options, model not pre-processed")
    print(f"{'tool':<20} {'method':<8} {'samples':>7} {'wall s':>8} {'peak RSS MiB':>12} "
          f"{'ORT/qcc':>8}")
    tools = ([] if args.skip_qcc else ["qcc"]) + ["ORT calibrator", "ORT quantize_static"]
    notes = []
    with tempfile.TemporaryDirectory(prefix="calib_vs_ort.") as tmp:
        for method in args.methods:
            qcc_wall = None
            for tool in tools:
                wall, rss, inner = run_repeated(tool, method, args.samples, args, qcc, model,
                                                data, tmp)
                if tool == "qcc":
                    qcc_wall = wall
                ratio = f"{wall / qcc_wall:8.2f}" if qcc_wall and tool != "qcc" else f"{'-':>8}"
                print(f"{tool:<20} {method:<8} {args.samples:>7} {wall:>8.2f} {rss:>12.1f} "
                      f"{ratio}", flush=True)
                if inner is not None:
                    notes.append(f"{tool} {method}: {inner:.2f} s in process")
    print("# without interpreter start and imports: " + "; ".join(notes))


if __name__ == "__main__":
    main()
