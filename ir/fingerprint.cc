#include "ir/fingerprint.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/strings/string_view.h"
#include "ir/printer.h"

namespace qcc::ir {
namespace {

// FNV-1a 64 over text and tails; 8-byte words (little-endian) fold in as h = rotl(h ^ w, 23) * P,
// which is a bijection of h for every word (so any single changed word changes the result) and
// about 8x faster than byte-wise FNV on weights. Every field is prefixed by its length.
class Hasher {
 public:
  void Bytes(const void* data, size_t n) {
    U64(n);
    const auto* p = static_cast<const uint8_t*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      w = __builtin_bswap64(w);
#endif
      h_ ^= w;
      h_ = ((h_ << 23) | (h_ >> 41)) * kPrime;
    }
    for (; i < n; ++i) Byte(p[i]);
  }
  void Str(absl::string_view s) { Bytes(s.data(), s.size()); }
  void U64(uint64_t v) {
    for (int k = 0; k < 8; ++k) Byte(static_cast<uint8_t>(v >> (8 * k)));
  }
  void Tensor(const qcc::Tensor& t) {
    Str(DTypeName(t.dtype()));
    U64(t.dims().size());
    for (int64_t d : t.dims()) U64(static_cast<uint64_t>(d));
    if (t.defined() && t.nbytes() > 0) {
      Bytes(t.raw(), t.nbytes());
    } else {
      U64(0);
    }
  }
  /// The final value, avalanched (splitmix64's finalizer) so that every bit depends on all input.
  uint64_t Finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static constexpr uint64_t kPrime = 1099511628211ULL;
  void Byte(uint8_t b) { h_ = (h_ ^ b) * kPrime; }
  uint64_t h_ = 14695981039346656037ULL;
};

template <typename T, typename = void>
struct HasEnumNames : std::false_type {};
template <typename T>
struct HasEnumNames<T, std::void_t<decltype(EnumNames<T>::kNames)>> : std::true_type {};

// Hashes every attribute field exactly (floats by their bits), by name.
struct AttrHasher {
  Hasher* h;
  void operator()(absl::string_view name, int64_t v) {
    h->Str(name);
    h->U64(static_cast<uint64_t>(v));
  }
  void operator()(absl::string_view name, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    h->Str(name);
    h->U64(bits);
  }
  void operator()(absl::string_view name, const Ints& v) {
    h->Str(name);
    h->U64(v.size());
    for (int64_t x : v) h->U64(static_cast<uint64_t>(x));
  }
  void operator()(absl::string_view name, const Floats& v) {
    h->Str(name);
    h->U64(v.size());
    for (float x : v) (*this)("", x);
  }
  void operator()(absl::string_view name, DType v) {
    h->Str(name);
    h->Str(DTypeName(v));
  }
  void operator()(absl::string_view name, const qcc::Tensor& v) {
    h->Str(name);
    h->Tensor(v);
  }
  template <typename E>
  std::enable_if_t<HasEnumNames<E>::value> operator()(absl::string_view name, E v) {
    h->Str(name);
    h->Str(EnumNames<E>::kNames[static_cast<int>(v)]);
  }
};

std::string Hex16(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = kDigits[v & 15];
  return s;
}

}  // namespace

std::string Fingerprint(const Graph& graph) {
  Hasher h;
  h.Str("qcc-graph-fingerprint-1");
  h.U64(static_cast<uint64_t>(graph.opset()));
  h.U64(graph.symbols().size());
  for (const std::string& s : graph.symbols()) h.Str(s);
  h.U64(graph.inputs().size());
  for (const Value* v : graph.inputs()) {
    h.Str(v->name());
    h.Str(TypeToString(graph, v->type()));
  }
  for (const auto& v : graph.values()) {
    if (v->constant() == nullptr) continue;
    h.Str("const");
    h.Str(v->name());
    h.Str(TypeToString(graph, v->type()));
    h.Tensor(*v->constant());
  }
  h.U64(graph.nodes().size());
  for (const auto& n : graph.nodes()) {
    h.Str(OpName(n->kind()));
    h.U64(n->inputs().size());
    for (const Value* v : n->inputs()) {
      h.U64(v != nullptr);
      if (v != nullptr) h.Str(v->name());
    }
    h.U64(n->outputs().size());
    for (const Value* v : n->outputs()) {
      h.Str(v->name());
      h.Str(TypeToString(graph, v->type()));
    }
    std::visit([&](const auto& a) { a.Visit(AttrHasher{&h}); }, n->attrs_variant());
  }
  h.U64(graph.outputs().size());
  for (const Value* v : graph.outputs()) h.Str(v->name());
  return Hex16(h.Finish());
}

}  // namespace qcc::ir
