#include "ir/graph.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace qcc::ir {

void Value::set_constant(Tensor t) {
  type_ = TensorType(t.dtype(), std::vector<Dim>(t.dims().begin(), t.dims().end()));
  constant_ = std::move(t);
}

namespace {

void RemoveUse(Value* v, Node* node, int index) {
  if (v == nullptr) return;
  auto& uses = const_cast<std::vector<Use>&>(v->uses());
  auto it = std::find(uses.begin(), uses.end(), Use{node, index});
  if (it != uses.end()) uses.erase(it);
}

/// Whether attribute struct A gives constants of a unary function.
template <typename A, typename = void>
struct GivesUnaryConstants : std::false_type {};
template <typename A>
struct GivesUnaryConstants<A, std::void_t<decltype(std::declval<const A&>().SetUnaryConstants(
                                  std::declval<UnaryCall&>()))>> : std::true_type {};

}  // namespace

std::optional<UnaryCall> UnaryCallOf(const Node& node) {
  const std::optional<UnaryFn> fn = UnaryFnOf(node.kind());
  if (!fn) return std::nullopt;
  UnaryCall call;
  call.fn = *fn;
  if (*fn == UnaryFn::kClip) {
    call.alpha = -std::numeric_limits<float>::max();
    call.beta = std::numeric_limits<float>::max();
  }
  std::visit(
      [&call](const auto& attrs) {
        if constexpr (GivesUnaryConstants<std::decay_t<decltype(attrs)>>::value) {
          attrs.SetUnaryConstants(call);
        }
      },
      node.attrs_variant());
  return call;
}

void Node::SetInput(int i, Value* v) {
  if (i >= num_inputs()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i] != nullptr) {
    auto& uses = inputs_[i]->uses_;
    uses.erase(std::find(uses.begin(), uses.end(), Use{this, i}));
  }
  inputs_[i] = v;
  if (v != nullptr) v->uses_.push_back({this, i});
}

void Node::AddInput(Value* v) { SetInput(num_inputs(), v); }

void SwapNames(Value& a, Value& b) {
  std::swap(a.name_, b.name_);
  std::swap(a.given_quant_, b.given_quant_);
  std::swap(a.given_weight_scales_, b.given_weight_scales_);
}

std::string Graph::FreshName(absl::string_view stem) {
  return absl::StrCat(stem, "__", fresh_counter_++);
}

Value* Graph::NewValue(std::string name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->name_ = name.empty() ? FreshName("v") : std::move(name);
  v->type_ = std::move(type);
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::NewConstant(std::string name, Tensor data) {
  Value* v = NewValue(std::move(name));
  v->set_constant(std::move(data));
  return v;
}

Value* Graph::AddInput(std::string name, TensorType type) {
  Value* v = NewValue(std::move(name), std::move(type));
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Node* Graph::AddNode(OpKind kind, std::string name, std::vector<Value*> inputs,
                     const std::vector<std::string>& output_names) {
  auto n = std::make_unique<Node>();
  n->kind_ = kind;
  n->name_ = name.empty() ? FreshName(OpName(kind)) : std::move(name);
  n->attrs_ = DefaultAttrs(kind);
  Node* node = n.get();
  nodes_.push_back(std::move(n));
  for (Value* v : inputs) node->AddInput(v);
  for (size_t i = 0; i < output_names.size(); ++i) {
    Value* out = NewValue(output_names[i]);
    out->producer_ = node;
    out->producer_output_ = static_cast<int>(i);
    node->outputs_.push_back(out);
  }
  return node;
}

void Graph::RemoveNode(Node* node) {
  for (int i = 0; i < node->num_inputs(); ++i) RemoveUse(node->inputs_[i], node, i);
  for (Value* out : node->outputs_) out->producer_ = nullptr;
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(),
                            [&](const std::unique_ptr<Node>& p) { return p.get() == node; }));
}

void Graph::MoveNodeAfter(Node* node, const Node* anchor) {
  auto find = [&](const Node* n) {
    return std::find_if(nodes_.begin(), nodes_.end(),
                        [&](const std::unique_ptr<Node>& p) { return p.get() == n; });
  };
  std::unique_ptr<Node> owned = std::move(*find(node));
  nodes_.erase(find(nullptr));
  auto at = anchor == nullptr ? nodes_.begin() : find(anchor) + 1;
  nodes_.insert(at, std::move(owned));
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->SetInput(u.index, to);
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
}

void Graph::RemoveDeadValues() {
  absl::flat_hash_set<const Value*> live(inputs_.begin(), inputs_.end());
  live.insert(outputs_.begin(), outputs_.end());
  for (const auto& n : nodes_) {
    for (Value* v : n->inputs_) live.insert(v);
    for (Value* v : n->outputs_) live.insert(v);
  }
  values_.erase(
      std::remove_if(values_.begin(), values_.end(),
                     [&](const std::unique_ptr<Value>& v) { return !live.contains(v.get()); }),
      values_.end());
}

absl::Status Graph::TopologicalSort() {
  absl::flat_hash_map<const Node*, int> pending;
  std::vector<Node*> ready;
  for (const auto& n : nodes_) {
    int deps = 0;
    for (Value* v : n->inputs_) {
      if (v != nullptr && v->producer_ != nullptr) ++deps;
    }
    pending[n.get()] = deps;
    if (deps == 0) ready.push_back(n.get());
  }
  // Keep the original order among ready nodes so printing stays stable.
  absl::flat_hash_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  auto by_position = [&](Node* a, Node* b) { return position[a] > position[b]; };
  std::vector<Node*> order;
  std::make_heap(ready.begin(), ready.end(), by_position);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), by_position);
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (Value* out : n->outputs_) {
      for (const Use& u : out->uses_) {
        if (--pending[u.node] == 0) {
          ready.push_back(u.node);
          std::push_heap(ready.begin(), ready.end(), by_position);
        }
      }
    }
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_) {
      if (pending[n.get()] > 0) {
        return absl::InvalidArgumentError(absl::StrCat("graph has a cycle through node '", n->name_,
                                                       "' (", OpName(n->kind_), ")"));
      }
    }
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (Node* n : order) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const std::unique_ptr<Node>& p) { return p.get() == n; });
    sorted.push_back(std::move(*it));
  }
  nodes_ = std::move(sorted);
  return absl::OkStatus();
}

Value* Graph::FindValue(absl::string_view name) const {
  for (const auto& v : values_) {
    if (v->name_ == name) return v.get();
  }
  return nullptr;
}

std::unique_ptr<Graph> Graph::EmptyLike() const {
  auto g = std::make_unique<Graph>();
  g->set_name(name_);
  g->set_opset(opset_);
  g->symbols_ = symbols_;
  return g;
}

int Graph::AddSymbol(std::string name) {
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i] == name) return static_cast<int>(i);
  }
  symbols_.push_back(std::move(name));
  return static_cast<int>(symbols_.size()) - 1;
}

}  // namespace qcc::ir
