#!/usr/bin/env python3
"""qcc against ONNX Runtime on five image models: int8 accuracy, calibration cost and speed.

(And minilm-l6-v2, the transformer, through bench/transformer_vs_ort.py: speed at batch 8 x 128
tokens and retrieval accuracy; and ppocr-det-v3, the text detector, through
bench/detector_vs_ort.py: speed only, batch 1 at 640x640 and 320x320 and batch 32 at 320x320.
Their sections of docs/benchmarks.md are kept when a run leaves them out, and a run of only them
keeps the image models' part.)

For mnist-8, resnet20-cifar10, squeezenet1.1, ppocr-cls-mbv3 and efficientnet-lite0, on the same
calibration images and the same evaluation images of ../shared/data:
- ORT: quant_pre_process, then quantize_static (QDQ, per-channel QInt8 weights) with MinMax and
  Entropy calibration, activations QInt8 symmetric (`s8`) and QUInt8 asymmetric (ORT's default,
  `u8`); ORT CPU execution. ORT fp32 runs the fp32 model (squeezenet: fp16 -> fp32 converted).
- qcc: `qcc calibrate` + `qcc compile --int8 --per-channel` with minmax and entropy, then the
  qcc CPU runtime (`qcc compare`, `qcc bench`); qcc fp32 is its fused fp32 evaluator.
Every calibration, evaluation and timing runs in a fresh process. Each timing is also shown as
operations per second against this CPU's peak (build/bench/cpu_peak; the multiply-adds are
`qcc inspect`'s count for the plan). Results go to
WORKDIR/results.json; bench/compare_ort_report.py turns them into docs/benchmarks.md and
docs/benchmarks.svg. Usually run through bench/compare-ort (which runs scripts/setup first).

    .venv/bin/python bench/compare_ort.py [--quick] [--models resnet20-cifar10 ...]
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calib_vs_ort import cpu_name, measure  # noqa: E402

import ort_side  # noqa: E402
import detector_vs_ort  # noqa: E402
import transformer_vs_ort  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = "compare_ort"
ORT_CONFIGS = [("minmax", "s8"), ("minmax", "u8"), ("entropy", "s8"), ("entropy", "u8")]
QCC_METHODS = ("minmax", "entropy")
CIFAR_PRE = ["--resize", "32", "--crop", "32", "--scale", "0.00392156862745098", "--mean",
             "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"]
MODELS = {
    "mnist-8": dict(
        onnx="mnist-8/model.onnx", data="mnist-test", pre=["--grayscale"], labels="folders",
        calib_stride=10, eval_stride=1, batch32=False, shape=[1, 1, 28, 28], top5=False, ort_extra=["--no-bias-adjust"],
        note="fixed batch 1 (a Reshape pins it): batch-1 latency only, no batch-32 throughput; "
        "ORT quantize_static needs QDQDisableWeightAdjustForInt32Bias (its weight-scale "
        "adjustment for the int32 bias of the MatMul+Add raises a ValueError)"),
    "resnet20-cifar10": dict(
        onnx="resnet20-cifar10/model.onnx", data="cifar10-test", pre=CIFAR_PRE, labels="folders",
        calib_stride=10, eval_stride=1, batch32=True, shape=[1, 3, 32, 32], top5=False,
        note="calibration: every 10th image (500), evaluation: all 5,000"),
    "squeezenet1.1": dict(
        onnx="squeezenet1.1/model-fp16.onnx", data="imagenet-val-sample",
        pre=["--resize", "256", "--crop", "224", "--channel-order", "bgr", "--mean",
             "104,117,123"], labels="prefix", calib_stride=1, eval_stride=1, batch32=False,
        shape=[1, 3, 224, 224], top5=True, fp16=True,
        note="fp16 weights: ORT gets an fp32 opset-13 copy (qcc reads model-fp16.onnx); fixed "
        "batch 1; the 500 photos are both the "
        "calibration and the evaluation set"),
    "ppocr-cls-mbv3": dict(
        onnx="ppocr-cls-mbv3/model.onnx", data="imagenet-val-sample", make_text_lines=True,
        pre=["--scale", "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std",
             "0.5,0.5,0.5"], labels="folders", calib_stride=2, eval_stride=1,
        batch32=True, shape=[1, 3, 48, 192], top5=False, fix_input=True,
        compile=["--shape", "x=N,3,48,192"], bench_shape="x={b},3,48,192",
        note="1,000 48x192 text lines that scripts/make_text_lines.py writes on bands of the 500 "
        "photos (upright: label 0, turned 180 degrees: label 1); calibration: every other line "
        "(500), evaluation: all 1,000; ORT gets an opset-13 copy with input [N,3,48,192]"),
    "efficientnet-lite0": dict(
        onnx="efficientnet-lite0/model.onnx", data="imagenet-val-sample",
        pre=["--resize", "256", "--crop", "224", "--scale", "0.00392156862745098", "--mean",
             "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"], labels="prefix", calib_stride=1,
        eval_stride=1, batch32=True, shape=[1, 3, 224, 224], top5=True,
        note="the 500 photos are both the calibration and the evaluation set; dynamic batch"),
}


def timing_iters(quick):
    """{batch: [warmup, iterations]} for one timing process."""
    return {"1": [3, 10] if quick else [10, 100], "32": [1, 3] if quick else [3, 20]}


def run_checked(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({proc.returncode}): "
                           + " | ".join(proc.stderr.strip().splitlines()[-4:]))
    return proc.stdout


def fields(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def image_list(data_dir):
    return ort_side.list_images(data_dir)


def make_subset(data_dir, paths, dest):
    """A folder of symlinks to `paths` (relative to data_dir), sub-folders kept."""
    shutil.rmtree(dest, ignore_errors=True)
    for p in paths:
        os.makedirs(os.path.dirname(os.path.join(dest, p)), exist_ok=True)
        os.symlink(os.path.join(data_dir, p), os.path.join(dest, p))
    return dest


def labels_file(paths, dest):
    with open(dest, "w") as f:
        for p in paths:
            f.write(f"{os.path.basename(p)} {int(os.path.basename(p)[:3])}\n")
    return dest


class Runner:
    """Runs every configuration of one model; fills self.result."""

    def __init__(self, name, spec, args, qcc, work):
        self.name, self.spec, self.args, self.qcc = name, spec, args, qcc
        self.work = os.path.join(work, name)
        os.makedirs(self.work, exist_ok=True)
        self.model = os.path.join(args.shared, "models", spec["onnx"])
        self.data = os.path.join(args.shared, "data", spec["data"])
        if spec.get("make_text_lines"):
            lines = os.path.join(os.path.dirname(qcc), "..", "data", "ppocr-text-lines")
            run_checked([sys.executable, os.path.join(REPO, "scripts", "make_text_lines.py"),
                         "--photos", self.data, "--out", lines])
            self.data = os.path.abspath(lines)
        every = image_list(self.data)
        stride = spec["calib_stride"] * (5 if args.quick else 1)
        self.calib_stride = stride
        self.calib = every[::stride]
        self.eval = every[::spec["eval_stride"] * (5 if args.quick else 1)]
        self.eval_dir = self.data if len(self.eval) == len(every) else make_subset(
            self.data, self.eval, os.path.join(self.work, "eval"))
        self.result = dict(model=name, note=spec["note"], calib_samples=len(self.calib),
                           eval_samples=len(self.eval), batch32=spec["batch32"],
                           top5=spec["top5"], accuracy={}, calibration={}, timing={},
                           errors=[])

    def log(self, msg):
        print(f"[{PROG}] {self.name}: {msg}", flush=True)

    def child(self, argv, threads=None):
        """A fresh process of ort_side.py; returns (wall s, peak MiB, its last JSON line)."""
        env = dict(os.environ)
        if threads:
            for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                env.setdefault(key, str(threads))
        cmd = [sys.executable, os.path.join(REPO, "bench", "ort_side.py")] + argv
        wall, rss, out = measure(cmd, env)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        return wall, rss, json.loads(lines[-1])

    def pre_args(self):
        return ["--pre", json.dumps(self.spec["pre"])]

    # ---- ORT ---------------------------------------------------------------------------------

    def ort_prepare(self):
        _, _, info = self.child(["prepare", "--model", self.model, "--work", self.work,
                                 "--spec", json.dumps(self.spec)])
        self.ort_fp32, self.ort_pre = info["fp32"], info["pre"]
        self.entropy_bytes_per_image = info["activation_bytes_per_image"]

    def ort_quantize(self):
        calib_list = os.path.join(self.work, "calib.txt")
        with open(calib_list, "w") as f:
            f.write("\n".join(os.path.join(self.data, p) for p in self.calib))
        self.ort_models = {}
        for method, act in ORT_CONFIGS:
            key = f"ORT {method} {act}"
            samples = len(self.calib)
            if method == "entropy":
                # The float activations of one image from shape inference, times 1.3: what
                # ORT's collector measured on squeezenet (35 MB per image against 28 estimated).
                per = 1.3 * self.entropy_bytes_per_image
                budget = self.args.entropy_gb * 2**30
                if per * samples > budget:
                    samples = int(budget // per)
                    self.log(f"ORT entropy: {per / 2**20:.1f} MiB of activations per image; "
                             f"capped to {samples} of {len(self.calib)} calibration images")
                if samples < 1:
                    self.result["errors"].append(f"{key}: skipped (one image needs "
                                                 f"{per / 2**30:.1f} GiB)")
                    continue
            out = os.path.join(self.work, f"ort.{method}.{act}.onnx")
            try:
                wall, rss, info = self.child(
                    ["quantize", "--model", self.ort_pre, "--out", out, "--list", calib_list,
                     "--samples", str(samples), "--method", method, "--act", act,
                     "--threads", "2", "--batch", "1" if not self.spec["batch32"] else "10"]
                    + self.pre_args() + self.spec.get("ort_extra", []), threads=2)
            except SystemExit as e:
                self.result["errors"].append(f"{key}: quantize_static failed: {str(e)[-300:]}")
                continue
            self.ort_models[key] = out
            self.result["calibration"][key] = dict(wall_s=wall, peak_mib=rss, samples=samples,
                                                   inner_s=info["seconds"])
            self.log(f"{key}: quantize_static {wall:.1f} s, {rss:.0f} MiB, {samples} images")

    def ort_accuracy(self):
        models = {"ORT fp32": self.ort_fp32, **self.ort_models}
        eval_list = os.path.join(self.work, "eval.txt")
        with open(eval_list, "w") as f:
            f.write("\n".join(self.eval))
        _, _, info = self.child(["evaluate", "--data", self.data, "--list", eval_list,
                                 "--models", json.dumps(models), "--labels",
                                 str(self.spec["labels"]), "--threads", "2",
                                 "--batch", "50" if self.spec["batch32"] else "1"]
                                + self.pre_args(), threads=2)
        self.result["accuracy"].update(info)

    def ort_time(self, key, path, threads, runs):
        """One fresh ORT process timing `path` at every batch on `threads` threads, into runs."""
        batches = [1, 32] if self.spec["batch32"] else [1]
        try:
            _, _, info = self.child(
                ["time", "--model", path, "--threads", str(threads), "--batches",
                 json.dumps(batches), "--shape", json.dumps(self.spec["shape"]),
                 "--iters", json.dumps(self.iters())], threads=threads)
        except SystemExit as e:
            self.result["errors"].append(f"{key} timing: {str(e)[-300:]}")
            return
        for b, ms in info.items():
            runs.setdefault((key, f"b{b}t{threads}"), []).append(ms)

    def store_timing(self, runs):
        """The smallest over --repeats rounds of each fresh process's median: the least disturbed
        round of each configuration, as bench/plans_vs_ort.py takes it. A round's median is
        already robust to a stray slow run; across rounds the VM's speed drifts (up to 2x in
        minutes on 2026-12-03), and a slow spell only ever adds time, so the median of three
        rounds still moved ratios by up to 1.4x between runs where the smallest moves least."""
        for (key, column), values in runs.items():
            self.result["timing"].setdefault(key, {})[column] = min(values)
            self.result.setdefault("timing_runs", {}).setdefault(key, {})[column] = values

    def iters(self):
        return timing_iters(self.args.quick)

    # ---- qcc ---------------------------------------------------------------------------------

    def qcc_build(self):
        self.plans = {}
        for method in QCC_METHODS:
            key = f"qcc {method}"
            table = os.path.join(self.work, f"qcc.{method}.calib.json")
            plan = os.path.join(self.work, f"qcc.{method}.plan")
            cmd = [self.qcc, "calibrate", self.model, self.data, "-o", table,
                   "--calib-method", method, "--threads", "2"] + self.spec["pre"]
            if self.calib_stride > 1:
                cmd += ["--shard", f"0/{self.calib_stride}"]
            try:
                wall, rss, _ = measure(cmd)
                cwall, crss, _ = measure(
                    [self.qcc, "compile", self.model, "--int8", "--per-channel", "--calib", table,
                     "--calib-method", method, "-o", plan] + self.spec.get("compile", [])
                    + (["--batch", "1:32"] if self.spec["batch32"] else []))
            except SystemExit as e:
                self.result["errors"].append(f"{key}: {str(e)[-300:]}")
                continue
            self.plans[key] = plan
            if "multiply_adds" not in self.result:
                self.result["multiply_adds"] = multiply_adds(self.qcc, plan)
            self.result["calibration"][key] = dict(
                wall_s=wall, peak_mib=rss, samples=len(self.calib), compile_s=cwall,
                compile_peak_mib=crss)
            self.log(f"{key}: calibrate {wall:.1f} s, {rss:.0f} MiB; compile {cwall:.1f} s")

    def qcc_accuracy(self):
        labels = []
        if self.spec["labels"] == "folders":
            labels = ["--labels-from-folders"]
        elif self.spec["labels"] == "prefix":
            labels = ["--labels", labels_file(self.eval, os.path.join(self.work, "labels.txt"))]
        for key, plan in self.plans.items():
            try:
                out = run_checked([self.qcc, "compare", self.model, plan, self.eval_dir,
                                   "--threads", "2"] + self.spec["pre"] + labels)
            except RuntimeError as e:
                self.result["errors"].append(f"{key} compare: {e}")
                continue
            f = fields([l for l in out.splitlines() if l.startswith("compare:")][-1])
            get = lambda k: float(f[k]) if k in f else None  # noqa: E731
            self.result["accuracy"][key] = dict(
                top1=get("plan_top1"), top5=get("plan_top5"), agree=get("agreement"),
                sqnr=get("sqnr_db"), samples=int(float(f["samples"])))
            self.result["accuracy"]["qcc fp32"] = dict(
                top1=get("fp32_top1"), top5=get("fp32_top5"), agree=1.0, sqnr=None,
                samples=int(float(f["samples"])))

    def qcc_time(self, key, path, threads, runs):
        """Fresh `qcc bench` processes timing `path` at every batch on `threads` threads."""
        for batch in ([1, 32] if self.spec["batch32"] else [1]):
            warmup, iters = self.iters()[str(batch)]
            shape = []
            if key == "qcc fp32" and "bench_shape" in self.spec:
                shape = ["--shape", self.spec["bench_shape"].format(b=batch)]
            try:
                out = run_checked([self.qcc, "bench", path, "--batch", str(batch),
                                   "--threads", str(threads), "--warmup", str(warmup),
                                   "--iters", str(iters)] + shape)
            except RuntimeError as e:
                self.result["errors"].append(f"{key} bench: {e}")
                continue
            f = fields([l for l in out.splitlines() if l.startswith("bench:")][-1])
            runs.setdefault((key, f"b{batch}t{threads}"), []).append(float(f["median_ms"]))

    def timing(self):
        """--repeats rounds; in each, every configuration once per thread count, each qcc one
        right after its ORT peers (fp32 after ORT fp32, the plans after ORT's int8 models): a
        VM's speed can drift by 2x over minutes, which skews ratios of timings taken one tool
        after the other (docs/benchmarks.md, 2026-12-03: efficientnet-lite0 fp32 b1 read 1.30 of
        ORT in such a run, 1.00-1.05 in adjacent pairs)."""
        ort_fp32 = {"ORT fp32": self.ort_fp32} if getattr(self, "ort_fp32", None) else {}
        qcc_fp32 = {"qcc fp32": self.model}
        if self.spec.get("fp16") and ort_fp32:
            qcc_fp32["qcc fp32 (ORT's fp32 copy)"] = self.ort_fp32
        groups = [(ort_fp32, qcc_fp32), (self.ort_models, self.plans)]
        runs = {}
        for _ in range(self.args.repeats):
            for threads in (1, 2):
                for ort_group, qcc_group in groups:
                    for key, path in ort_group.items():
                        self.ort_time(key, path, threads, runs)
                    for key, path in qcc_group.items():
                        self.qcc_time(key, path, threads, runs)
        self.store_timing(runs)

    def run(self):
        start = time.time()
        steps = [("ORT prepare", self.ort_prepare), ("ORT quantize", self.ort_quantize),
                 ("qcc calibrate+compile", self.qcc_build), ("ORT accuracy", self.ort_accuracy),
                 ("qcc accuracy", self.qcc_accuracy), ("timing", self.timing)]
        self.ort_models, self.plans = {}, {}
        for label, step in steps:
            t0 = time.time()
            try:
                step()
            except (RuntimeError, SystemExit, KeyError, ValueError) as e:
                self.result["errors"].append(f"{label}: {str(e)[-400:]}")
                self.log(f"{label} failed: {str(e)[-400:]}")
            self.log(f"{label} done in {time.time() - t0:.0f} s")
        self.result["seconds"] = time.time() - start
        return self.result


def multiply_adds(qcc, plan):
    """The multiply-adds of a batch-1 run of `plan` (`qcc inspect`), or None."""
    out = subprocess.run([qcc, "inspect", plan], capture_output=True, text=True).stdout
    m = re.search(r"multiply-adds at batch 1: (\d+)", out)
    return int(m.group(1)) if m else None


def cpu_peak(build):
    """{isa: {threads: G operations/s}} from build/bench/cpu_peak (this CPU's fp32 FMA and int8
    VNNI peak, measured), or {} without it."""
    exe = os.path.join(build, "bench", "cpu_peak")
    if not os.path.exists(exe):
        return {}
    out = subprocess.run([exe, "--threads", "2"], capture_output=True, text=True).stdout
    peak = {}
    for isa, threads, value in re.findall(r"isa=(\S+) threads=(\d+) \w+=([\d.]+)", out):
        peak.setdefault(isa, {})[threads] = float(value)
    return peak


def versions(qcc):
    import numpy  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    import platform  # noqa: PLC0415

    out = subprocess.run([qcc, "--version"], capture_output=True, text=True).stdout
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return dict(date=datetime.date.today().isoformat(), cpu=cpu_name(), cpus=os.cpu_count(),
                memory=mem, qcc=out.splitlines()[0] if out else "qcc", commit=commit or "?",
                onnxruntime=onnxruntime.__version__, onnx=onnx.__version__,
                numpy=numpy.__version__, python=platform.python_version())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.environ.get("QCC_BUILD_DIR", "build"))
    parser.add_argument("--shared", default=os.environ.get(
        "QCC_SHARED_DIR", os.path.join(REPO, "..", "shared")))
    extra = [transformer_vs_ort.MODEL, detector_vs_ort.MODEL]
    parser.add_argument("--models", nargs="+", choices=list(MODELS) + extra,
                        default=list(MODELS) + extra)
    parser.add_argument("--quick", action="store_true",
                        help="1/5 of the calibration and evaluation images, fewer timing runs")
    parser.add_argument("--repeats", type=int, default=None,
                        help="rounds of fresh processes per timing; the smallest of their "
                        "medians is shown (default 5, --quick 1)")
    parser.add_argument("--entropy-gb", type=float, default=12.0,
                        help="cap ORT Entropy's calibration set to this many GiB of activations")
    parser.add_argument("--workdir", help="default BUILD/compare-ort")
    parser.add_argument("--docs", default=os.path.join(REPO, "docs"),
                        help="where benchmarks.md and benchmarks.svg go ('' to skip)")
    args = parser.parse_args()
    args.shared = os.path.abspath(args.shared)
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    build = args.build if os.path.isabs(args.build) else os.path.join(REPO, args.build)
    qcc = os.path.join(build, "bin", "qcc")
    if not os.path.exists(qcc):
        sys.exit(f"{PROG}: {qcc} not found (run scripts/setup or set --build)")
    work = args.workdir or os.path.join(build, "compare-ort")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    results = dict(meta=versions(qcc), quick=args.quick, models=[])
    results["meta"]["peak"] = cpu_peak(build)
    results["meta"]["command"] = "bench/compare-ort" + (" --quick" if args.quick else "")
    results["meta"]["timing"] = (f"the smallest of {args.repeats} rounds' medians (a fresh "
                                 f"process a round, its median of {{b1}} runs at batch 1 and "
                                 f"{{b32}} at batch 32)")
    iters = timing_iters(args.quick)
    results["meta"]["timing"] = results["meta"]["timing"].format(b1=iters["1"][1],
                                                                 b32=iters["32"][1])
    for name in args.models:
        if name not in MODELS:
            continue
        results["models"].append(Runner(name, MODELS[name], args, qcc, work).run())
        with open(os.path.join(work, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    if transformer_vs_ort.MODEL in args.models:
        results["transformers"] = transformer_vs_ort.run(
            qcc, args.shared, os.path.join(work, transformer_vs_ort.MODEL), args.quick,
            args.repeats)
    if detector_vs_ort.MODEL in args.models:
        results["detector"] = detector_vs_ort.run(
            qcc, args.shared, os.path.join(work, detector_vs_ort.MODEL), args.quick, args.repeats)
    results["meta"]["seconds"] = time.time() - start
    path = os.path.join(work, "results.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    import compare_ort_report  # noqa: PLC0415

    print(compare_ort_report.full_markdown(results))
    if args.docs:
        compare_ort_report.write(results, args.docs)
        print(f"[{PROG}] wrote {args.docs}/benchmarks.md and benchmarks.svg; raw: {path}")


if __name__ == "__main__":
    main()
