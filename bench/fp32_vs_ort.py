#!/usr/bin/env python3
"""qcc's fp32 CPU evaluator against ONNX Runtime's CPU fp32 on the same model, batch and threads.

For each thread count T, runs `qcc bench MODEL --batch B --threads T --warmup W --iters N` and
ONNX Runtime (intra_op_num_threads=T, inter_op_num_threads=1, sequential execution, its default
graph optimisations) on seeded random inputs of the same shape with the same warmup and
iteration counts, and prints the medians and their ratio. Run with the project venv:

    .venv/bin/python bench/fp32_vs_ort.py [--build build] [--threads 1 2]
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run_qcc(qcc, model, batch, threads, warmup, iters):
    """Runs `qcc bench` and returns its median latency in ms (from its `bench:` line)."""
    cmd = [qcc, "bench", model, "--batch", str(batch), "--threads", str(threads),
           "--warmup", str(warmup), "--iters", str(iters)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fp32_vs_ort: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("bench:")]
    if not lines:
        sys.exit(f"fp32_vs_ort: no 'bench:' line in the output of {' '.join(cmd)}:\n{proc.stdout}")
    fields = dict(re.findall(r"(\w+)=(\S+)", lines[-1]))
    return float(fields["median_ms"]), int(fields["batch"])


def ort_inputs(model_path, batch, seed):
    """Seeded random inputs for every graph input, dynamic extents set to `batch`."""
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        tt = inp.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else batch for d in tt.shape.dim]
        dtype = ONNX_TO_NUMPY.get(tt.elem_type)
        if dtype is None:
            sys.exit(f"fp32_vs_ort: input {inp.name} has an element type this script does not make")
        feeds[inp.name] = rng.standard_normal(dims).astype(dtype)
    return feeds


def run_ort(model, feeds, threads, warmup, iters):
    """Median latency in ms of ONNX Runtime CPU on `feeds`."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("QCC_BUILD_DIR", "build"),
                        help="qcc build folder (default $QCC_BUILD_DIR or build)")
    parser.add_argument("--shared", default=os.environ.get("QCC_SHARED_DIR",
                                                           os.path.join(REPO, "..", "shared")))
    parser.add_argument("--model", default="resnet20-cifar10",
                        help="a folder of shared/models holding model.onnx")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    qcc = os.path.join(build, "bin", "qcc")
    model = os.path.join(args.shared, "models", args.model, "model.onnx")
    for path in (qcc, model):
        if not os.path.exists(path):
            sys.exit(f"fp32_vs_ort: {path} not found (run scripts/setup; set --build/--shared)")

    version_lines = subprocess.run([qcc, "--version"], capture_output=True, text=True).stdout
    version = "; ".join(l.strip() for l in version_lines.splitlines() if l.strip())
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO")) or k == "QCC_BUILD_DIR"}
    print(f"# {cpu_name()}, {os.cpu_count()} CPUs; {version or 'qcc'}; "
          f"onnxruntime {ort.__version__}; warmup {args.warmup}, iters {args.iters}, "
          f"seed {args.seed}")
    print("# environment: " + (" ".join(f"{k}={v}" for k, v in sorted(env.items())) or "(none set)"))

    feeds = ort_inputs(model, args.batch, args.seed)
    print(f"{'model':<20} {'batch':>5} {'threads':>7} {'qcc ms':>10} {'ORT ms':>10} "
          f"{'qcc/ORT':>8}")
    for threads in args.threads:
        qcc_ms, qcc_batch = run_qcc(qcc, model, args.batch, threads, args.warmup, args.iters)
        if qcc_batch != args.batch:
            sys.exit(f"fp32_vs_ort: qcc ran batch {qcc_batch}, not {args.batch}")
        ort_ms = run_ort(model, feeds, threads, args.warmup, args.iters)
        print(f"{args.model:<20} {args.batch:>5} {threads:>7} {qcc_ms:>10.3f} {ort_ms:>10.3f} "
              f"{qcc_ms / ort_ms:>8.2f}")


if __name__ == "__main__":
    main()
