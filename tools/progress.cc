#include "tools/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace qcc::tools {

ProgressBar::ProgressBar(std::string unit)
    : unit_(std::move(unit)),
      enabled_(isatty(STDERR_FILENO) == 1 && std::getenv("QCC_NO_PROGRESS") == nullptr),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressBar::Update(int64_t done, int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  constexpr int kWidth = 30;
  const int filled =
      total > 0 ? static_cast<int>(kWidth * std::min<int64_t>(done, total) / total) : 0;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  std::string eta = "?";
  if (rate > 0 && total >= done) {
    const int64_t left = static_cast<int64_t>(static_cast<double>(total - done) / rate + 0.5);
    eta = absl::StrFormat("%d:%02d", left / 60, left % 60);
  }
  std::fprintf(stderr, "\r[%s] %lld/%lld %s  %.1f %s/s  ETA %s\x1b[K", bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total), unit_.c_str(), rate,
               unit_.c_str(), eta.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!enabled_) return;
  if (drawn_) std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  enabled_ = false;
}

}  // namespace qcc::tools
