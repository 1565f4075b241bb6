// Small ONNX models written from the test, for the command-line tests.
#ifndef QCC_TESTS_TOOLS_ONNX_MODELS_H_
#define QCC_TESTS_TOOLS_ONNX_MODELS_H_

#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace qcc::testing {

/// One float input or output of a test model; dims < 0 are symbolic ("N").
struct IoSpec {
  std::string name;
  std::vector<int64_t> dims;
};

/// A one-node model: `op_type` (default domain, opset 13) from `inputs` to `outputs`.
inline std::string OneNodeModel(const std::string& op_type, const std::vector<IoSpec>& inputs,
                                const std::vector<IoSpec>& outputs) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("qcc tools_test");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("test");
  auto add_io = [](onnx::ValueInfoProto* vi, const IoSpec& spec) {
    vi->set_name(spec.name);
    onnx::TypeProto_Tensor* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : spec.dims) {
      onnx::TensorShapeProto_Dimension* dim = tt->mutable_shape()->add_dim();
      if (d >= 0) {
        dim->set_dim_value(d);
      } else {
        dim->set_dim_param("N");
      }
    }
  };
  onnx::NodeProto* node = g->add_node();
  node->set_op_type(op_type);
  node->set_name("the_node");
  for (const IoSpec& in : inputs) {
    add_io(g->add_input(), in);
    node->add_input(in.name);
  }
  for (const IoSpec& out : outputs) {
    add_io(g->add_output(), out);
    node->add_output(out.name);
  }
  return model.SerializeAsString();
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_TOOLS_ONNX_MODELS_H_
