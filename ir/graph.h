// The IR: a Graph owns Nodes and Values; Values know their producer and their uses.
#ifndef QCC_IR_GRAPH_H_
#define QCC_IR_GRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/attrs.h"
#include "ir/op_kind.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::ir {

class Node;
class Graph;

/// One use of a Value: input `index` of `node`.
struct Use {
  Node* node;
  int index;
  bool operator==(const Use& o) const { return node == o.node && index == o.index; }
};

/// A tensor-valued edge. Owned by its Graph. Produced by exactly one of: a Node output, a graph
/// input, or a constant (`constant()` holds the data: an initializer or a folded value).
class Value {
 public:
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const TensorType& type() const { return type_; }
  void set_type(TensorType t) { type_ = std::move(t); }
  DType dtype() const { return type_.dtype; }

  /// The producing node, or nullptr for graph inputs and constants.
  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  /// The data of a constant value, or nullptr.
  const Tensor* constant() const { return constant_ ? &*constant_ : nullptr; }
  void set_constant(Tensor t);
  bool is_graph_input() const { return is_graph_input_; }
  const std::vector<Use>& uses() const { return uses_; }

  /// An int8 tensor's quantization parameters (null for every other tensor).
  const QuantParams* quant() const { return quant_ ? &*quant_ : nullptr; }
  void set_quant(QuantParams q) { quant_ = q; }
  /// The interval [lo, hi] (either may be infinite) an int8 tensor's float values were clamped
  /// to before quantizing because its consumers are constant outside it
  /// (passes::SaturationInterval); null when not clamped.
  const std::pair<float, float>* saturation() const {
    return saturation_ ? &*saturation_ : nullptr;
  }
  void set_saturation(std::pair<float, float> s) { saturation_ = s; }
  /// An int8 weight's per-channel scales (null for every other tensor).
  const ChannelScales* channel_scales() const {
    return channel_scales_ ? &*channel_scales_ : nullptr;
  }
  void set_channel_scales(ChannelScales s) { channel_scales_ = std::move(s); }

  /// The int8 grid a QDQ model gives this float tensor: its QuantizeLinear -> DequantizeLinear
  /// pair, read by the absorb-qdq pass (in qcc's int8 domain: a uint8 zero point z is z - 128).
  /// assign-precision quantizes the tensor on it instead of a calibrated range. Null for every
  /// other tensor. It belongs to the name: SwapNames moves it with the name.
  const QuantParams* given_quant() const { return given_quant_ ? &*given_quant_ : nullptr; }
  void set_given_quant(QuantParams q) { given_quant_ = q; }
  /// The scales a QDQ model gives this float weight constant (the DequantizeLinear of its int8
  /// weights, zero point 0): one per output channel, or one for the tensor; assign-precision
  /// quantizes the weights with them. Null for every other tensor; moves with the name too.
  const std::vector<float>* given_weight_scales() const {
    return given_weight_scales_ ? &*given_weight_scales_ : nullptr;
  }
  void set_given_weight_scales(std::vector<float> s) { given_weight_scales_ = std::move(s); }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int producer_output_ = 0;
  std::optional<Tensor> constant_;
  bool is_graph_input_ = false;
  std::vector<Use> uses_;
  std::optional<QuantParams> quant_;
  std::optional<std::pair<float, float>> saturation_;
  std::optional<ChannelScales> channel_scales_;
  std::optional<QuantParams> given_quant_;
  std::optional<std::vector<float>> given_weight_scales_;
  friend void SwapNames(Value& a, Value& b);
};

/// Swaps the names of `a` and `b` and what a model gave each name (given_quant,
/// given_weight_scales): what the passes do when one tensor takes another's place and name.
void SwapNames(Value& a, Value& b);

/// An operation. Owned by its Graph; inputs may be nullptr for omitted optional inputs.
class Node {
 public:
  OpKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// The typed attributes; `T` must be the struct ops.def names for this kind.
  template <typename T>
  const T& attrs() const {
    return std::get<T>(attrs_);
  }
  template <typename T>
  T& mutable_attrs() {
    return std::get<T>(attrs_);
  }
  const Attrs& attrs_variant() const { return attrs_; }
  void set_attrs(Attrs a) { attrs_ = std::move(a); }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  /// Input `i`, or nullptr when omitted or `i` is past the end.
  Value* input(int i) const { return i < num_inputs() ? inputs_[i] : nullptr; }
  Value* output(int i) const { return outputs_[i]; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  /// Rewires input `i` to `v` (nullptr omits it), keeping use lists right.
  void SetInput(int i, Value* v);
  /// Appends an input.
  void AddInput(Value* v);

 private:
  friend class Graph;
  OpKind kind_;
  std::string name_;
  Attrs attrs_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

/// The elementwise function `node` computes (ops.def's Unary column) with the constants its
/// attributes give (ir/attrs.h, SetUnaryConstants); nullopt when its kind computes none. Clip's
/// bounds are inputs, not attributes: its call has [alpha, beta] = [-FLT_MAX, FLT_MAX] (no
/// bound) for the caller to narrow to constant bound inputs.
std::optional<UnaryCall> UnaryCallOf(const Node& node);

/// A dataflow graph in topological order. Owns every Node and Value in it.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Moving keeps every Node* and Value* valid (they are owned through unique_ptr and hold no
  /// pointer to their Graph): a pass that writes a new graph moves it into the one it was given.
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  /// Creates a value with no producer (connect it with AddNode, AddInput or set_constant).
  Value* NewValue(std::string name, TensorType type = {});
  /// Creates a constant value holding `data`.
  Value* NewConstant(std::string name, Tensor data);
  /// Appends a graph input.
  Value* AddInput(std::string name, TensorType type);
  /// Marks `v` as graph output.
  void AddOutput(Value* v) { outputs_.push_back(v); }
  void SetOutput(int i, Value* v) { outputs_[i] = v; }

  /// Appends a node of `kind` with default attributes and `num_outputs` new output values
  /// named after `output_names` (empty names get fresh ones).
  Node* AddNode(OpKind kind, std::string name, std::vector<Value*> inputs,
                const std::vector<std::string>& output_names);
  /// Removes a node whose outputs have no uses and are not graph outputs.
  void RemoveNode(Node* node);
  /// Points every use of `from` (and graph outputs) at `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  /// Drops values that nothing produces, uses or outputs (constants included).
  void RemoveDeadValues();
  /// Moves `node` to just after `anchor` in the node order (to the front when `anchor` is null).
  /// The caller keeps the order topological (e.g. `anchor` produces `node`'s only input).
  void MoveNodeAfter(Node* node, const Node* anchor);
  /// Reorders nodes topologically; fails on a cycle or a use of an undefined value.
  absl::Status TopologicalSort();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  /// Finds a value by name (linear scan), or nullptr.
  Value* FindValue(absl::string_view name) const;

  /// Named symbolic dimensions (e.g. "N" for the batch); Dim -2-k refers to symbols()[k].
  int AddSymbol(std::string name);
  const std::vector<std::string>& symbols() const { return symbols_; }

  /// The default-domain opset the model was imported from.
  int opset() const { return opset_; }
  void set_opset(int opset) { opset_ = opset; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// A graph with this one's name, opset and symbols (so Dim indices of symbols carry over) and
  /// nothing else: what a pass that writes a new graph node by node starts from.
  std::unique_ptr<Graph> EmptyLike() const;

 private:
  std::string FreshName(absl::string_view stem);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<std::string> symbols_;
  int opset_ = 0;
  std::string name_;
  int64_t fresh_counter_ = 0;
};

}  // namespace qcc::ir

#endif  // QCC_IR_GRAPH_H_
