// A one-line progress bar on stderr for long commands (calibration, compile, bench): shown only
// when stderr is a terminal, so piped and logged runs stay quiet.
#ifndef QCC_TOOLS_PROGRESS_H_
#define QCC_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace qcc::tools {

class ProgressBar {
 public:
  /// `unit` names what is counted ("samples"). Enabled when stderr is a terminal and the
  /// environment variable QCC_NO_PROGRESS is unset.
  explicit ProgressBar(std::string unit);
  ~ProgressBar() { Finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Redraws "[#####.....] done/total  R unit/s  ETA m:ss" at most 10 times a second.
  void Update(int64_t done, int64_t total);
  /// Clears the line (once); later Updates draw nothing.
  void Finish();
  bool enabled() const { return enabled_; }

 private:
  std::string unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace qcc::tools

#endif  // QCC_TOOLS_PROGRESS_H_
