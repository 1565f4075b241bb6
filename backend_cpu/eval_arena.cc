#include "backend_cpu/eval_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/memory_plan.h"
#include "support/memory.h"

namespace qcc::cpu::internal {

/// One run's allocations in order (sizes and lifetimes in node steps) and, once planned, where
/// each goes in the arena.
struct RunLayout {
  std::vector<Dims> input_dims;
  std::vector<uint64_t> bytes;
  std::vector<int32_t> first_step;
  std::vector<int32_t> last_step;  // -1: outlived the run (allocated on its own next time)
  bool planned = false;
  std::vector<int64_t> offsets;  // -1: allocated on its own
  uint64_t arena_bytes = 0;
  std::shared_ptr<uint8_t> arena;  // allocated when a run first uses the plan
};

/// The bookkeeping of one run, shared with the deleters of the storage it handed out (which
/// may run after the run, on any thread).
struct RunState {
  std::mutex mu;
  int32_t step = 0;
  bool ended = false;
  std::vector<uint64_t> bytes;
  std::vector<int32_t> first_step;
  std::vector<int32_t> last_step;
  std::vector<uint8_t> alive;
  std::vector<uint8_t> in_arena;
  std::map<uint64_t, uint64_t> live_slices;  // arena offset -> end of every live arena tensor
  int64_t held = 0;                          // arena + live separate storage
  int64_t peak = 0;
  int64_t separate = 0;
};

namespace {

/// Blocks of this size or more are mapped from the system and unmapped when freed: glibc would
/// keep up to 64 MB of freed heap (twice its dynamic mmap threshold) after a first run, and the
/// process would stay that much above its arena for good.
constexpr uint64_t kMapBytes = uint64_t{1} << 20;

/// `bytes` bytes (a multiple of 64), 64-byte aligned, uninitialised.
uint8_t* AllocateBlock(uint64_t bytes) {
  if (bytes < kMapBytes) return static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

void FreeBlock(uint8_t* p, uint64_t bytes) {
  if (bytes < kMapBytes) {
    std::free(p);
  } else if (p != nullptr) {
    munmap(p, bytes);
  }
}

std::shared_ptr<uint8_t> AllocateArena(uint64_t bytes) {
  return std::shared_ptr<uint8_t>(AllocateBlock(bytes),
                                  [bytes](uint8_t* p) { FreeBlock(p, bytes); });
}

/// Deleter of a tensor's storage: records when it died and frees separate storage (an arena
/// slice keeps the arena alive until then).
struct ReleaseStorage {
  std::shared_ptr<RunState> state;
  int32_t index;
  uint64_t bytes;
  std::shared_ptr<uint8_t> arena;  // null for separate storage

  void operator()(uint8_t* p) const {
    if (arena == nullptr) FreeBlock(p, bytes);
    std::lock_guard<std::mutex> lock(state->mu);
    if (arena != nullptr) state->live_slices.erase(static_cast<uint64_t>(p - arena.get()));
    state->alive[index] = 0;
    if (!state->ended) state->last_step[index] = state->step;
    if (arena == nullptr) state->held -= static_cast<int64_t>(bytes);
  }
};

/// Places every tensor of `layout` that died within its run in one arena (greedy by size, as
/// the plan compiler does): tensors share bytes only when their lifetimes were disjoint.
void Plan(RunLayout& layout) {
  layout.planned = true;
  const size_t n = layout.bytes.size();
  layout.offsets.assign(n, -1);
  std::vector<runtime::BufferLifetime> lifetimes;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    if (layout.last_step[i] < 0) continue;
    lifetimes.push_back({layout.bytes[i], layout.first_step[i], layout.last_step[i]});
    ids.push_back(static_cast<int32_t>(i));
  }
  absl::StatusOr<runtime::MemoryPlan> plan = runtime::PlanMemory(lifetimes);
  if (!plan.ok() || plan->arena_bytes == 0) return;  // everything on its own
  layout.arena_bytes = plan->arena_bytes;
  for (size_t k = 0; k < ids.size(); ++k) {
    layout.offsets[ids[k]] = static_cast<int64_t>(plan->offsets[k]);
  }
}

}  // namespace

RunAllocator::RunAllocator(std::unique_ptr<RunLayout> layout, bool poison)
    : layout_(std::move(layout)), state_(std::make_shared<RunState>()), poison_(poison) {
  if (layout_ != nullptr && layout_->arena != nullptr) {
    state_->held = state_->peak = static_cast<int64_t>(layout_->arena_bytes);
  }
}

RunAllocator::~RunAllocator() = default;

void RunAllocator::SetStep(int32_t step) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->step = step;
}

bool RunAllocator::FitsInArena(int32_t index, uint64_t bytes) const {
  const RunLayout* l = layout_.get();
  if (l == nullptr || l->arena == nullptr || index >= static_cast<int32_t>(l->offsets.size()) ||
      l->offsets[index] < 0 || l->bytes[index] != bytes) {
    return false;
  }
  // The live slices are disjoint: only the last one starting before our end can overlap us.
  const uint64_t begin = static_cast<uint64_t>(l->offsets[index]);
  auto it = state_->live_slices.lower_bound(begin + bytes);
  return it == state_->live_slices.begin() || std::prev(it)->second <= begin;
}

int64_t RunAllocator::held() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->held;
}

absl::StatusOr<Tensor> RunAllocator::Allocate(DType dtype, Dims dims) {
  const uint64_t bytes =
      Tensor::StorageBytes(static_cast<size_t>(NumElements(dims)) * DTypeSize(dtype));
  RunState& s = *state_;
  int32_t index;
  bool in_arena;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    index = static_cast<int32_t>(s.bytes.size());
    in_arena = FitsInArena(index, bytes);
    s.bytes.push_back(bytes);
    s.first_step.push_back(s.step);
    s.last_step.push_back(-1);
    s.alive.push_back(1);
    s.in_arena.push_back(in_arena);
    if (in_arena) {
      const uint64_t begin = static_cast<uint64_t>(layout_->offsets[index]);
      s.live_slices.emplace(begin, begin + bytes);
    } else {
      s.held += static_cast<int64_t>(bytes);
      s.peak = std::max(s.peak, s.held);
      ++s.separate;
    }
  }
  if (layout_ != nullptr) {
    const RunLayout& l = *layout_;
    const bool as_planned = index < static_cast<int32_t>(l.bytes.size()) &&
                            l.bytes[index] == bytes && (l.offsets[index] >= 0) == in_arena;
    if (!as_planned) deviated_ = true;
  }
  uint8_t* p = in_arena ? layout_->arena.get() + layout_->offsets[index] : AllocateBlock(bytes);
  std::shared_ptr<uint8_t> storage(
      p, ReleaseStorage{state_, index, bytes, in_arena ? layout_->arena : nullptr});
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the system has no memory left for ", FormatBytes(bytes)));
  }
  if (poison_) std::memset(p, 0xff, bytes);
  return Tensor(dtype, std::move(dims), std::move(storage));
}

EvalArena::EvalArena() = default;
EvalArena::~EvalArena() = default;

std::unique_ptr<RunAllocator> EvalArena::Begin(const std::vector<Dims>& input_dims, bool poison) {
  std::unique_ptr<RunLayout> layout;
  {
    // The most recent record of these shapes, taken out of the pool (a run that overlaps this
    // one records its own).
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = layouts_.rbegin(); it != layouts_.rend(); ++it) {
      if ((*it)->input_dims == input_dims) {
        layout = std::move(*it);
        layouts_.erase(std::next(it).base());
        break;
      }
    }
  }
  if (layout != nullptr) {
    if (!layout->planned) Plan(*layout);
    // A slice that outlived an earlier run still holds the old arena: take a fresh one.
    if (layout->arena_bytes > 0 && (layout->arena == nullptr || layout->arena.use_count() > 1)) {
      layout->arena = AllocateArena(layout->arena_bytes);
    }
  } else {
    layout = std::make_unique<RunLayout>();
    layout->input_dims = input_dims;  // unplanned: this run only records
  }
  return std::unique_ptr<RunAllocator>(new RunAllocator(std::move(layout), poison));
}

EvalMemoryStats EvalArena::Finish(std::unique_ptr<RunAllocator> run) {
  RunState& s = *run->state_;
  RunLayout& used = *run->layout_;
  EvalMemoryStats stats;
  std::unique_ptr<RunLayout> next;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.ended = true;
    stats.peak_bytes = s.peak;
    stats.arena_bytes = used.arena != nullptr ? static_cast<int64_t>(used.arena_bytes) : 0;
    stats.separate_allocations = s.separate;
    // The plan held when every tensor went where it said, none in the arena outlived the run,
    // and none it kept out of the arena (having outlived the recorded run) died within this one.
    bool plan_held = used.planned && !run->deviated_ && s.bytes.size() == used.bytes.size();
    for (size_t i = 0; plan_held && i < s.alive.size(); ++i) {
      plan_held = s.alive[i] != s.in_arena[i];
    }
    if (plan_held) {
      next = std::move(run->layout_);  // the plan held: keep it and its arena
    } else {
      next = std::make_unique<RunLayout>();
      next->input_dims = used.input_dims;
      next->bytes = s.bytes;
      next->first_step = s.first_step;
      next->last_step = s.last_step;
      for (size_t i = 0; i < s.alive.size(); ++i) {
        if (s.alive[i]) next->last_step[i] = -1;
      }
    }
  }
  run.reset();
  std::lock_guard<std::mutex> lock(mu_);
  // Records of other shapes are dropped (the inputs changed shape: their arenas would only hold
  // memory), and at most kMaxKeptLayouts of these shapes are kept, one per run that overlapped.
  layouts_.erase(std::remove_if(layouts_.begin(), layouts_.end(),
                                [&](const std::unique_ptr<RunLayout>& l) {
                                  return l->input_dims != next->input_dims;
                                }),
                 layouts_.end());
  layouts_.push_back(std::move(next));
  if (layouts_.size() > kMaxKeptLayouts) layouts_.erase(layouts_.begin());
  last_stats_ = stats;
  return stats;
}

EvalMemoryStats EvalArena::last_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_stats_;
}

}  // namespace qcc::cpu::internal
