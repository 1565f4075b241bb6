#!/usr/bin/env python3
"""Makes reference outputs for the shared models that ship without test data.

ppocr-cls-mbv3 and ppocr-det-v3 come without test_data_set_* folders, so this script builds real
inputs from the shared photos (preprocessed as shared/DATA.md says), runs ONNX Runtime on them as
the independent reference, and writes the ONNX backend-test layout:

    <out>/<model>/test_data_set_0/input_0.pb, output_0.pb

tests/models/real_models_test.cc compares qcc against these. CTest runs this script as the
`make_model_refs` fixture; run it by hand with the project venv:

    .venv/bin/python scripts/make_model_refs.py --shared ../shared --out build/model_refs
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from PIL import Image


def load_rgb(path, height, width):
    """An RGB photo resized to height x width, as float32 HWC in [0, 1]."""
    img = Image.open(path).convert("RGB").resize((width, height), Image.BILINEAR)
    return np.asarray(img, dtype=np.float32) / 255.0


def ppocr_normalise(hwc_images):
    """PP-OCR preprocessing: (x - 0.5) / 0.5 per channel, stacked as NCHW float32."""
    batch = np.stack([(img - 0.5) / 0.5 for img in hwc_images])
    return np.ascontiguousarray(batch.transpose(0, 3, 1, 2), dtype=np.float32)


# Shared photos with text in them, so the OCR models see what they were trained for: on these the
# detector marks text regions (about 9% of the pixels of the web page) and the classifier's two
# classes both win once.
TEXT_PHOTOS = ["916_n06359193_web_site.jpg", "454_n02871525_bookshop.jpg"]


def photos(shared, count):
    """The first `count` of TEXT_PHOTOS, as paths into shared/data/imagenet-val-sample."""
    folder = os.path.join(shared, "data", "imagenet-val-sample")
    paths = [os.path.join(folder, n) for n in TEXT_PHOTOS[:count]]
    for p in paths:
        if not os.path.isfile(p):
            sys.exit(f"make_model_refs: photo {p} not found (is --shared right?)")
    return paths


# model -> function(shared) returning the NCHW input batch.
MODELS = {
    # Text-line direction classifier: batch of 2, 48x192.
    "ppocr-cls-mbv3": lambda shared: ppocr_normalise(
        [load_rgb(p, 48, 192) for p in photos(shared, 2)]),
    # Text detector: one photo at 320x320 (H and W multiples of 32).
    "ppocr-det-v3": lambda shared: ppocr_normalise([load_rgb(photos(shared, 1)[0], 320, 320)]),
}


def write_tensor(array, name, path):
    """Writes `array` as a serialized TensorProto, atomically."""
    proto = numpy_helper.from_array(array, name)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(proto.SerializeToString())
    os.replace(tmp, path)


def make_refs(model_name, shared, out_root):
    model_path = os.path.join(shared, "models", model_name, "model.onnx")
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if len(inputs) != 1:
        sys.exit(f"make_model_refs: {model_path} has inputs {inputs}, expected one")
    x = MODELS[model_name](shared)

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {inputs[0]: x})

    set_dir = os.path.join(out_root, model_name, "test_data_set_0")
    os.makedirs(set_dir, exist_ok=True)
    write_tensor(x, inputs[0], os.path.join(set_dir, "input_0.pb"))
    for k, (out, value) in enumerate(zip(session.get_outputs(), outputs)):
        write_tensor(np.asarray(value), out.name, os.path.join(set_dir, f"output_{k}.pb"))
    shapes = ", ".join(str(list(np.shape(v))) for v in outputs)
    print(f"make_model_refs: {model_name}: input {list(x.shape)} -> outputs {shapes} in {set_dir}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", required=True, help="the shared models/data folder")
    parser.add_argument("--out", required=True, help="where <model>/test_data_set_0 go")
    parser.add_argument("models", nargs="*", default=sorted(MODELS), help="models to do")
    args = parser.parse_args()
    for name in args.models:
        if name not in MODELS:
            sys.exit(f"make_model_refs: unknown model {name}; known: {', '.join(sorted(MODELS))}")
        make_refs(name, args.shared, args.out)


if __name__ == "__main__":
    main()
