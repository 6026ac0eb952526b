// The clock of CheckOptions::timings, shared by the loader and the checker stages.
#pragma once

#include "axqc/timing.h"

namespace axqc::detail {

// Seconds on the clock StageTimings `t` measures with (steady wall clock or thread CPU time).
double StageNow(const StageTimings& t);

// Lap(slot) adds the time since the previous lap (or construction, or Restart) to `slot`. Does
// nothing when `t` is null (timings not requested).
class StageClock {
 public:
  explicit StageClock(StageTimings* t) : t_(t), t0_(t != nullptr ? StageNow(*t) : 0) {}
  void Lap(double StageTimings::*slot) {
    if (t_ == nullptr) return;
    const double now = StageNow(*t_);
    t_->*slot += now - t0_;
    t0_ = now;
  }
  // Starts the next lap now (time spent since the last lap was accounted for elsewhere).
  void Restart() {
    if (t_ != nullptr) t0_ = StageNow(*t_);
  }

 private:
  StageTimings* t_;
  double t0_;
};

}  // namespace axqc::detail
