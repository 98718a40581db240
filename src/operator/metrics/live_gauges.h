// LiveGauges: gauges rebuilt from the objects that exist at every scrape, so the series of a
// deleted object go with it: clear() removes what the last scrape added, set() adds a gauge for
// this one.
//
// Threading: used where ManagerMetrics::serialize() runs its refreshers (one thread).
#pragma once

#include <utility>
#include <vector>

#include <prometheus/family.h>
#include <prometheus/gauge.h>

namespace nmo::op {

class LiveGauges {
 public:
  /// Removes every gauge set() added since the last clear().
  void clear() {
    for (const auto& [family, gauge] : live_) family->Remove(gauge);
    live_.clear();
  }

  /// Adds the gauge `labels` of `family` with `value`, until the next clear().
  void set(prometheus::Family<prometheus::Gauge>& family, const prometheus::Labels& labels,
           double value) {
    prometheus::Gauge& gauge = family.Add(labels);
    gauge.Set(value);
    live_.emplace_back(&family, &gauge);
  }

 private:
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> live_;
};

}  // namespace nmo::op
