#!/usr/bin/env python3
"""The ONNX Runtime side of compare_ort.py, one step per process; prints one JSON line.

    ort_side.py prepare  --model M --work DIR --spec JSON   fp32 copy for ORT + quant_pre_process
    ort_side.py quantize --model PRE --out Q --list FILE --samples N --method M --act s8|u8
                         [--format qdq|qoperator] ...
    ort_side.py evaluate --data DIR --list FILE --models JSON --labels folders|prefix|None ...
    ort_side.py time     --model M --threads T --batches JSON --shape JSON --iters JSON

Images are preprocessed from qcc's own flags (--pre: a JSON list such as ["--resize", "32",
...]) with PIL and numpy: decode (RGB or grey), short side to --resize with PIL bilinear (long
side rounded), centre crop (top = (h-H)//2, left = (w-W)//2), channel order, *scale, -mean,
/std, NCHW float32.
"""

import argparse
import json
import os
import statistics
import sys
import time

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".bmp")


def list_images(data_dir):
    """Every image under data_dir as a sorted relative path (qcc's sample order)."""
    found = []
    for root, _, files in os.walk(data_dir, followlinks=True):
        for name in files:
            if name.lower().endswith(IMAGE_EXTENSIONS):
                found.append(os.path.relpath(os.path.join(root, name), data_dir))
    return sorted(found)


def parse_pre(flags):
    """qcc's preprocessing flags -> a dict of their values."""
    out, i = {}, 0
    while i < len(flags):
        key = flags[i].lstrip("-").replace("-", "_")
        if key == "grayscale":
            out[key] = True
            i += 1
        else:
            out[key] = flags[i + 1]
            i += 2
    return out


def hw(text):
    h, _, w = text.partition("x")
    return (int(h), int(w or h))


def load_image(path, pre):
    import numpy as np  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    image = Image.open(path).convert("L" if pre.get("grayscale") else "RGB")
    if "resize" in pre:
        w, h = image.size
        if "x" in pre["resize"]:
            nh, nw = hw(pre["resize"])
        else:
            f = int(pre["resize"]) / min(w, h)
            nw, nh = max(1, round(w * f)), max(1, round(h * f))
        if (nw, nh) != (w, h):
            image = image.resize((nw, nh), Image.BILINEAR)
    if "crop" in pre:
        ch, cw = hw(pre["crop"])
        w, h = image.size
        left, top = (w - cw) // 2, (h - ch) // 2
        image = image.crop((left, top, left + cw, top + ch))
    x = np.asarray(image, dtype=np.float32)
    if x.ndim == 2:
        x = x[:, :, None]
    if pre.get("channel_order") == "bgr":
        x = x[:, :, ::-1]
    x = x * np.float32(float(pre.get("scale", 1)))
    if "mean" in pre:
        x = x - np.array([float(v) for v in pre["mean"].split(",")], np.float32)
    if "std" in pre:
        x = x / np.array([float(v) for v in pre["std"].split(",")], np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def session(path, threads):
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def to_fp32(model):
    """fp16 initializers, inputs, outputs and Casts -> fp32 (squeezenet's model-fp16.onnx)."""
    import numpy as np  # noqa: PLC0415
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415

    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT16:
            g.initializer[i].CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(t).astype(np.float32), t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
    return model


def prepare(args):
    import onnx  # noqa: PLC0415
    from onnxruntime.quantization import quant_pre_process  # noqa: PLC0415

    spec = json.loads(args.spec)
    model = onnx.load(args.model)
    changed = False
    if spec.get("fp16"):
        model, changed = to_fp32(model), True
    if spec.get("fix_input"):
        inputs = {t.name for t in model.graph.initializer}
        x = next(i for i in model.graph.input if i.name not in inputs)
        for k, (d, v) in enumerate(zip(x.type.tensor_type.shape.dim, spec["shape"])):
            d.Clear()
            if k == 0:
                d.dim_param = "N"
            else:
                d.dim_value = v
        changed = True
    if model.opset_import[0].version < 13:
        # Per-channel QDQ needs DequantizeLinear's axis (opset 13); ORT's own upgrade stops at 11.
        from onnx import version_converter  # noqa: PLC0415

        model, changed = version_converter.convert_version(model, 13), True
    fp32 = args.model
    if changed:
        fp32 = os.path.join(args.work, "ort.fp32.onnx")
        onnx.save(model, fp32)
    pre = os.path.join(args.work, "ort.pre.onnx")
    quant_pre_process(fp32, pre, skip_symbolic_shape=True)
    # What ORT's Entropy calibrator keeps per image: every float activation (batch 1).
    inferred = onnx.shape_inference.infer_shapes(onnx.load(pre))
    total = 0
    for v in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = v.type.tensor_type
        if t.elem_type != onnx.TensorProto.FLOAT:
            continue
        n = 1
        for d in t.shape.dim:
            n *= d.dim_value if d.HasField("dim_value") else 1
        total += 4 * n
    print(json.dumps({"fp32": fp32, "pre": pre, "activation_bytes_per_image": total}))


def quantize(args):
    import numpy as np  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    from onnxruntime.quantization import (  # noqa: PLC0415
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static)
    from onnxruntime.quantization import calibrate as ort_calibrate  # noqa: PLC0415

    start = time.perf_counter()
    pre = parse_pre(json.loads(args.pre))
    with open(args.list) as f:
        paths = f.read().split("\n")
    samples = args.samples - args.samples % args.batch
    paths = paths[:samples]
    graph = onnx.load(args.model, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    input_name = next(i.name for i in graph.input if i.name not in initializers)

    # As calib_vs_ort.py: ORT's calibration session pinned to --threads.
    def create_inference_session(self):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        self.infer_session = onnxruntime.InferenceSession(
            self.augmented_model_path, sess_options=options, providers=self.execution_providers)

    ort_calibrate.CalibraterBase.create_inference_session = create_inference_session

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.next = 0

        def get_next(self):
            if self.next >= len(paths):
                return None
            chunk = paths[self.next:self.next + args.batch]
            self.next += len(chunk)
            return {input_name: np.stack([load_image(p, pre) for p in chunk])}

    quant_format = QuantFormat.QOperator if args.format == "qoperator" else QuantFormat.QDQ
    quantize_static(args.model, args.out, Reader(), quant_format=quant_format,
                    per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8 if args.act == "s8" else QuantType.QUInt8,
                    calibrate_method={"minmax": CalibrationMethod.MinMax,
                                      "entropy": CalibrationMethod.Entropy}[args.method],
                    extra_options={"ActivationSymmetric": args.act == "s8",
                                   "QDQDisableWeightAdjustForInt32Bias": args.no_bias_adjust})
    print(json.dumps({"seconds": time.perf_counter() - start, "samples": len(paths)}))


def evaluate(args):
    import numpy as np  # noqa: PLC0415

    pre = parse_pre(json.loads(args.pre))
    with open(args.list) as f:
        paths = f.read().split("\n")
    x = np.stack([load_image(os.path.join(args.data, p), pre) for p in paths])
    labels = None
    if args.labels == "folders":
        classes = sorted({p.split(os.sep)[0] for p in list_images(args.data)})
        labels = np.array([classes.index(p.split(os.sep)[0]) for p in paths])
    elif args.labels == "prefix":
        labels = np.array([int(os.path.basename(p)[:3]) for p in paths])
    outputs = {}
    for key, path in json.loads(args.models).items():
        s = session(path, args.threads)
        name = s.get_inputs()[0].name
        outs = [s.run(None, {name: x[i:i + args.batch]})[0] for i in range(0, len(x),
                                                                          args.batch)]
        outputs[key] = np.concatenate(outs).reshape(len(x), -1).astype(np.float64)
    ref = outputs["ORT fp32"]
    result = {}
    for key, out in outputs.items():
        err = np.sum((ref - out) ** 2)
        top5 = np.argsort(-out, axis=1)[:, :5]
        result[key] = dict(
            top1=float(np.mean(out.argmax(1) == labels)) if labels is not None else None,
            top5=float(np.mean((top5 == labels[:, None]).any(1))) if labels is not None
            else None,
            agree=float(np.mean(out.argmax(1) == ref.argmax(1))),
            sqnr=None if err == 0 else float(10 * np.log10(np.sum(ref ** 2) / err)),
            samples=len(x))
    print(json.dumps(result))


def time_model(args):
    import numpy as np  # noqa: PLC0415

    s = session(args.model, args.threads)
    name = s.get_inputs()[0].name
    shape = json.loads(args.shape)
    iters = json.loads(args.iters)
    rng = np.random.default_rng(0)
    result = {}
    for batch in json.loads(args.batches):
        feeds = {name: rng.standard_normal([batch] + shape[1:]).astype(np.float32)}
        warmup, n = iters[str(batch)]
        for _ in range(warmup):
            s.run(None, feeds)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            s.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        result[str(batch)] = statistics.median(times)
    print(json.dumps(result))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", choices=("prepare", "quantize", "evaluate", "time"))
    for flag in ("--model", "--work", "--spec", "--out", "--list", "--method", "--act", "--pre",
                 "--data", "--models", "--labels", "--batches", "--shape", "--iters"):
        p.add_argument(flag)
    p.add_argument("--no-bias-adjust", action="store_true")
    p.add_argument("--format", choices=("qdq", "qoperator"), default="qdq")
    p.add_argument("--samples", type=int, default=500)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    {"prepare": prepare, "quantize": quantize, "evaluate": evaluate, "time": time_model}[
        args.step](args)


if __name__ == "__main__":
    sys.exit(main())
