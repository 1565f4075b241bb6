#!/usr/bin/env python3
"""ONNX Runtime's own int8 quantization of the PaddleOCR text-direction classifier, against fp32.

Context for qcc's number on the same model and data. Each photo (sorted *.jpg under --data) becomes
a 48x192 strip: short side resized to 192 with PIL bilinear (long side rounded), centre crop
48x192 (top = (h-48)//2, left = (w-192)//2), RGB/255, (x-0.5)/0.5, NCHW. Calibration: every
--calib-stride-th image starting at 0 (250 of 500); evaluation: all images.

Shapes: the model's input x is [dyn,3,dyn,dyn] (opset 9). The script sets x to [1,3,48,192]
(dim values written into the graph input), converts the model to opset 13 with
onnx.version_converter (ORT's own automatic upgrade goes to opset 11 only, whose DequantizeLinear has
no axis attribute, so per-channel QDQ models fail to load), runs onnx shape inference, then ORT's
quant_pre_process (ONNX shape inference + ORT basic optimisations, which fold BatchNormalization
into Conv; skip_symbolic_shape=True since sympy is absent). fp32 reference = the original model
in onnxruntime. Every quantize_static combination (QDQ; weights QInt8; activations QInt8/QUInt8;
per_channel True/False; MinMax/Entropy/Percentile) runs in its own child process with a
--timeout (default 180 s) covering calibration + quantization + evaluation.

Note: quantize_static gives no way to set the Entropy calibrator's bins, and ORT's defaults
(num_bins = num_quantized_bins = 128) leave it one candidate threshold, the full range, so Entropy
gives exactly MinMax's scales (checked: all 254 scale tensors identical).

Metrics: top-1 agreement of argmax(int8) with argmax(fp32) over all strips, and SQNR (dB) of the
softmax output, 10*log10(sum ref^2 / sum (ref-q)^2) over all outputs.

    .venv/bin/python bench/ppocr_cls_ort_int8.py [--model ...] [--data ...] [--timeout 180]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

MODEL = "/work/shared/models/ppocr-cls-mbv3/model.onnx"
DATA = "/work/shared/data/imagenet-val-sample"
H, W = 48, 192


def list_images(data_dir):
    return sorted(f for f in os.listdir(data_dir) if f.lower().endswith(".jpg"))


def load_strip(path):
    from PIL import Image
    img = Image.open(path).convert("RGB")
    w, h = img.size
    if w <= h:
        nw, nh = W, int(round(h * W / w))
    else:
        nw, nh = int(round(w * W / h)), W
    img = img.resize((nw, nh), Image.BILINEAR)
    top, left = (nh - H) // 2, (nw - W) // 2
    img = img.crop((left, top, left + W, top + H))
    x = np.asarray(img, dtype=np.float32) / 255.0
    x = (x - 0.5) / 0.5
    return x.transpose(2, 0, 1)[None].copy()  # [1,3,48,192]


def load_all(data_dir):
    return [load_strip(os.path.join(data_dir, f)) for f in list_images(data_dir)]


def session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_model(path, strips):
    s = session(path)
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: x})[0] for x in strips], axis=0)


def metrics(ref, q):
    agree = float(np.mean(ref.argmax(1) == q.argmax(1)))
    err = np.sum((ref.astype(np.float64) - q) ** 2)
    sqnr = float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))
    return agree, sqnr


def prepare(model, work, opset):
    """Fixes x to [1,3,48,192], converts to `opset`, runs shape inference and quant_pre_process; returns the path."""
    import onnx
    from onnxruntime.quantization import quant_pre_process
    m = onnx.load(model)
    dims = m.graph.input[0].type.tensor_type.shape.dim
    for d, v in zip(dims, (1, 3, H, W)):
        d.Clear()
        d.dim_value = v
    if opset and m.opset_import[0].version < opset:
        from onnx import version_converter
        m = version_converter.convert_version(m, opset)
    m = onnx.shape_inference.infer_shapes(m)
    fixed = os.path.join(work, "fixed.onnx")
    onnx.save(m, fixed)
    pre = os.path.join(work, "pre.onnx")
    quant_pre_process(fixed, pre, skip_symbolic_shape=True)
    return pre


def child(args):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                          QuantType, quantize_static)
    strips = load_all(args.data)
    calib = strips[::args.calib_stride]
    ref = np.load(args.ref)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {"x": x}

    t0 = time.time()
    quantize_static(args.pre, args.out, Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=args.per_channel == "on",
                    activation_type=getattr(QuantType, args.act), weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, args.method))
    tq = time.time() - t0
    q = run_model(args.out, strips)
    agree, sqnr = metrics(ref, q)
    print(json.dumps({"agree": agree, "sqnr": sqnr, "quant_s": tq}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--data", default=DATA)
    p.add_argument("--calib-stride", type=int, default=2)
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per combination")
    p.add_argument("--methods", default="MinMax,Entropy,Percentile")
    p.add_argument("--acts", default="QInt8,QUInt8")
    p.add_argument("--per-channel-modes", default="on,off")
    p.add_argument("--opset", type=int, default=13,
                   help="convert the model (opset 9) to this opset first; per-channel QDQ needs the "
                        "DequantizeLinear axis attribute of opset 13 (0: leave it, ORT then moves it "
                        "to 11 and per-channel fails)")
    p.add_argument("--keep", help="directory to keep the prepared and quantized models in")
    # child-only
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--pre", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--ref", help=argparse.SUPPRESS)
    p.add_argument("--act", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--per-channel", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)

    work = args.keep or tempfile.mkdtemp(prefix="ppocr_ort_int8_")
    os.makedirs(work, exist_ok=True)
    strips = load_all(args.data)
    n = len(strips)
    ref = run_model(args.model, strips)
    ref_path = os.path.join(work, "ref.npy")
    np.save(ref_path, ref)
    pre = prepare(args.model, work, args.opset)
    pre_out = run_model(pre, strips)
    a0, s0 = metrics(ref, pre_out)
    counts = np.bincount(ref.argmax(1), minlength=ref.shape[1])
    print(f"{n} strips, {len(strips[::args.calib_stride])} calibration; fp32 class counts {counts.tolist()}")
    print(f"fp32 after quant_pre_process vs original: agree {a0*100:.1f}%, SQNR {s0:.1f} dB")
    print(f"{'act':7} {'per_ch':6} {'method':10} {'top1 agree':>10} {'SQNR dB':>8} {'quant s':>8}")
    for method in args.methods.split(","):
        for pc in args.per_channel_modes.split(","):
            for act in args.acts.split(","):
                out = os.path.join(work, f"q_{act}_{pc}_{method}.onnx")
                cmd = [sys.executable, os.path.abspath(__file__), "--child", "--pre", pre, "--out", out,
                       "--ref", ref_path, "--act", act, "--method", method, "--per-channel", pc,
                       "--data", args.data, "--calib-stride", str(args.calib_stride)]
                t0 = time.time()
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    print(f"{act:7} {pc:6} {method:10} skipped: over {args.timeout:.0f} s", flush=True)
                    continue
                lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
                if r.returncode != 0 or not lines:
                    tail = (r.stderr.strip().splitlines() or ["?"])[-1]
                    print(f"{act:7} {pc:6} {method:10} failed (rc {r.returncode}): {tail}", flush=True)
                    continue
                d = json.loads(lines[-1])
                print(f"{act:7} {pc:6} {method:10} {d['agree']*100:9.1f}% {d['sqnr']:8.2f} "
                      f"{d['quant_s']:8.1f}   (total {time.time()-t0:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
