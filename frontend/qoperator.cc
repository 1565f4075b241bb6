// QOperator -> QDQ: see frontend/qoperator.h.
#include "frontend/qoperator.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/tensor_proto.h"
#include "support/status.h"

namespace qcc::frontend::internal {
namespace {

/// How one QOperator op maps to its float op. Quantized inputs come as (x, scale, zero point)
/// triples starting at `triples`; the output's (scale, zero point) at `out` (-1: a float output).
struct QOpSpec {
  const char* float_op;
  std::vector<int> triples;  // start index of each (x, scale, zp) triple
  int out = -1;              // index of the output scale (zero point follows)
  int weight_triple = -1;    // which triple holds weights (per output channel), or -1
  int bias = -1;             // index of an int32 bias (scale: triple 0's times the weights')
  bool variadic = false;     // QLinearConcat: (scale, zp) first, then triples to the end
};

const std::map<std::string, QOpSpec>& Specs() {
  static const auto* specs = new std::map<std::string, QOpSpec>{
      {"QLinearConv", {"Conv", {0, 3}, 6, 1, 8}},
      {"QLinearMatMul", {"MatMul", {0, 3}, 6, 1}},
      {"com.microsoft:QLinearAdd", {"Add", {0, 3}, 6}},
      {"com.microsoft:QLinearMul", {"Mul", {0, 3}, 6}},
      {"com.microsoft:QLinearGlobalAveragePool", {"GlobalAveragePool", {0}, 3}},
      {"com.microsoft:QLinearAveragePool", {"AveragePool", {0}, 3}},
      {"com.microsoft:QLinearSigmoid", {"Sigmoid", {0}, 3}},
      {"com.microsoft:QLinearLeakyRelu", {"LeakyRelu", {0}, 3}},
      {"com.microsoft:QLinearConcat", {"Concat", {}, 0, -1, -1, true}},
      {"com.microsoft:QGemm", {"Gemm", {0, 3}, 7, 1, 6}},
      {"com.microsoft:QLinearSoftmax", {"Softmax", {0}, 3}},
  };
  return *specs;
}

std::string Key(const onnx::NodeProto& n) {
  const bool ms = n.domain() == "com.microsoft";
  return ms                                                ? "com.microsoft:" + n.op_type()
         : (n.domain().empty() || n.domain() == "ai.onnx") ? n.op_type()
                                                           : n.domain() + ":" + n.op_type();
}

std::string Label(const onnx::NodeProto& n) {
  return absl::StrCat(n.name().empty() ? "a node" : absl::StrCat("node '", n.name(), "'"), " (",
                      n.op_type(), ")");
}

class Expander {
 public:
  Expander(const onnx::GraphProto& graph, const std::string& base_dir)
      : in_(graph), base_dir_(base_dir) {
    for (const auto& t : graph.initializer()) {
      names_.insert(t.name());
      inits_[t.name()] = &t;
    }
    for (const auto& v : graph.input()) names_.insert(v.name());
    for (const auto& n : graph.node()) {
      for (const auto& o : n.output()) names_.insert(o);
    }
  }

  absl::StatusOr<onnx::GraphProto> Run() {
    onnx::GraphProto out = in_;
    out.clear_node();
    out_ = &out;
    for (const auto& n : in_.node()) {
      const std::string key = Key(n);
      if (key == "MatMulInteger" || key == "ConvInteger") {
        return absl::UnimplementedError(
            absl::StrCat(Label(n),
                         " is dynamic quantization (integer results without scales); qcc reads "
                         "QDQ and QLinear* models"));
      }
      auto it = Specs().find(key);
      if (it == Specs().end()) {
        *out.add_node() = n;
        continue;
      }
      QCC_RETURN_IF_ERROR(Expand(n, it->second));
    }
    return out;
  }

 private:
  std::string Fresh(const std::string& stem) {
    std::string name = stem;
    for (int k = 1; names_.count(name) != 0; ++k) name = absl::StrCat(stem, "_", k);
    names_.insert(name);
    return name;
  }

  std::string Input(const onnx::NodeProto& n, int i) const {
    return i < n.input_size() ? n.input(i) : "";
  }

  onnx::NodeProto* Add(const std::string& op, const std::string& name) {
    onnx::NodeProto* node = out_->add_node();
    node->set_op_type(op);
    node->set_name(name);
    return node;
  }

  void SetAxis(onnx::NodeProto* node, int64_t axis) {
    auto* a = node->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }

  /// DQ(x, scale, zp) -> a fresh float tensor; `axis` for a per-channel scale.
  std::string Dequantize(const onnx::NodeProto& n, int first, int64_t axis) {
    const std::string x = Input(n, first);
    onnx::NodeProto* dq = Add("DequantizeLinear", Fresh(n.name() + "_dq_" + x));
    dq->add_input(x);
    dq->add_input(Input(n, first + 1));
    if (!Input(n, first + 2).empty()) dq->add_input(Input(n, first + 2));
    if (axis >= 0) SetAxis(dq, axis);
    const std::string y = Fresh(x + "_dequantized");
    dq->add_output(y);
    return y;
  }

  /// The rank of an initializer, or -1.
  int Rank(const std::string& name) const {
    auto it = inits_.find(name);
    return it == inits_.end() ? -1 : it->second->dims_size();
  }

  /// The output-channel axis of the weights of `n` (input `first`).
  int64_t WeightAxis(const onnx::NodeProto& n, const std::string& float_op, int first) {
    const int rank = Rank(Input(n, first));
    if (float_op == "Conv") return 0;
    if (float_op == "Gemm") {
      for (const auto& a : n.attribute()) {
        if (a.name() == "transB" && a.i() != 0) return 0;
      }
      return 1;
    }
    return rank > 0 ? rank - 1 : 1;  // MatMul: the last axis of B
  }

  absl::StatusOr<Tensor> Initializer(const onnx::NodeProto& n, const std::string& name) {
    auto it = inits_.find(name);
    if (it == inits_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Label(n), ": '", name, "' is not an initializer; its int32 bias needs constant scales"));
    }
    return TensorFromProto(*it->second, base_dir_);
  }

  /// The inputs and the output `Expand` reads are there: one output, and each quantized input
  /// with its scale (zero points may be left out).
  absl::Status CheckArity(const onnx::NodeProto& n, const QOpSpec& spec,
                          const std::vector<int>& triples) const {
    if (n.output_size() != 1 || n.output(0).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Label(n), " has ", n.output_size(), " outputs; it should have one"));
    }
    if (triples.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Label(n), " has no quantized inputs"));
    }
    for (int first : triples) {
      if (Input(n, first).empty() || Input(n, first + 1).empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            Label(n), ": input ", first, " or its scale (input ", first + 1, ") is missing"));
      }
    }
    return absl::OkStatus();
  }

  /// DQ of the int32 bias with scale = input scale * weight scales.
  absl::StatusOr<std::string> Bias(const onnx::NodeProto& n, const QOpSpec& spec) {
    const int x = spec.triples[0], w = spec.triples[spec.weight_triple];
    QCC_ASSIGN_OR_RETURN(Tensor xs, Initializer(n, Input(n, x + 1)));
    QCC_ASSIGN_OR_RETURN(Tensor ws, Initializer(n, Input(n, w + 1)));
    QCC_ASSIGN_OR_RETURN(Tensor b, Initializer(n, Input(n, spec.bias)));
    if (xs.numel() != 1 || (ws.numel() != 1 && ws.numel() != b.numel())) {
      return absl::InvalidArgumentError(absl::StrCat(
          Label(n), ": the int32 bias '", Input(n, spec.bias), "' has ", b.numel(),
          " values, the input scale ", xs.numel(), " and the weight scale ", ws.numel(),
          "; expected one input scale and one weight scale per tensor or per bias value"));
    }
    xs = CastTensor(xs, DType::kFloat32);
    ws = CastTensor(ws, DType::kFloat32);
    Tensor scale(DType::kFloat32, {b.numel()});
    for (int64_t i = 0; i < b.numel(); ++i) {
      scale.data<float>()[i] = xs.data<float>()[0] * ws.data<float>()[ws.numel() == 1 ? 0 : i];
    }
    const std::string scale_name = Fresh(Input(n, spec.bias) + "_scale");
    TensorToProto(scale, scale_name, out_->add_initializer());
    onnx::NodeProto* dq = Add("DequantizeLinear", Fresh(n.name() + "_dq_bias"));
    dq->add_input(Input(n, spec.bias));
    dq->add_input(scale_name);
    SetAxis(dq, 0);
    const std::string y = Fresh(Input(n, spec.bias) + "_dequantized");
    dq->add_output(y);
    return y;
  }

  absl::Status Expand(const onnx::NodeProto& n, const QOpSpec& spec) {
    std::vector<int> triples = spec.triples;
    if (spec.variadic) {  // (Y_scale, Y_zero_point) first, then (X, scale, zero point) each
      if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Label(n), " has ", n.input_size(),
                         " inputs; expected the output scale and zero point, then an (x, scale, "
                         "zero point) triple per input"));
      }
      for (int i = 2; i + 2 < n.input_size(); i += 3) triples.push_back(i);
    }
    QCC_RETURN_IF_ERROR(CheckArity(n, spec, triples));
    onnx::NodeProto op;
    op.set_op_type(spec.float_op);
    op.set_name(n.name().empty() ? Fresh(std::string(spec.float_op)) : n.name());
    for (const auto& a : n.attribute()) {
      if (a.name() == "channels_last") {
        if (a.i() != 0) {
          return absl::UnimplementedError(
              absl::StrCat(Label(n), ": channels_last pooling is not supported"));
        }
        continue;
      }
      if (a.name() == "opset") {  // QLinearSoftmax: the Softmax semantics it follows
        if (a.i() < 13) {
          return absl::UnimplementedError(absl::StrCat(
              Label(n), ": the opset-", a.i(), " Softmax form (coerced to 2-D) is not supported"));
        }
        continue;
      }
      *op.add_attribute() = a;
    }
    for (size_t t = 0; t < triples.size(); ++t) {
      const bool weights = static_cast<int>(t) == spec.weight_triple;
      const int64_t axis = weights ? WeightAxis(n, spec.float_op, triples[t]) : -1;
      op.add_input(Dequantize(n, triples[t], axis));
    }
    if (spec.bias >= 0 && !Input(n, spec.bias).empty()) {
      QCC_ASSIGN_OR_RETURN(std::string b, Bias(n, spec));
      op.add_input(b);
    }
    const bool float_output = spec.out < 0 || Input(n, spec.out).empty();
    if (float_output) {
      op.add_output(n.output(0));
      *out_->add_node() = op;
      return absl::OkStatus();
    }
    const std::string y = Fresh(n.output(0) + "_float");
    op.add_output(y);
    *out_->add_node() = op;
    onnx::NodeProto* q = Add("QuantizeLinear", Fresh(op.name() + "_q"));
    q->add_input(y);
    q->add_input(Input(n, spec.out));
    if (!Input(n, spec.out + 1).empty()) q->add_input(Input(n, spec.out + 1));
    q->add_output(n.output(0));
    return absl::OkStatus();
  }

  const onnx::GraphProto& in_;
  const std::string& base_dir_;
  onnx::GraphProto* out_ = nullptr;
  std::set<std::string> names_;
  std::map<std::string, const onnx::TensorProto*> inits_;
};

}  // namespace

bool HasQOperators(const onnx::GraphProto& graph) {
  for (const auto& n : graph.node()) {
    const std::string key = Key(n);
    if (Specs().count(key) != 0 || key == "MatMulInteger" || key == "ConvInteger") return true;
  }
  return false;
}

absl::StatusOr<onnx::GraphProto> ExpandQOperators(const onnx::GraphProto& graph,
                                                  const std::string& base_dir) {
  return Expander(graph, base_dir).Run();
}

}  // namespace qcc::frontend::internal
