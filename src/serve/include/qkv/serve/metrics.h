// The server's counters in Prometheus' text exposition format (GET /metrics): requests by
// endpoint and status, sentences and tokens translated, the queue's length, batch sizes and
// request latency as histograms. Thread-safe; every call takes one mutex briefly.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv::serve {

// Cumulative buckets with upper bounds `bounds` (ascending) and +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The _bucket, _sum and _count lines of `name` (with `labels`, e.g. endpoint="/translate").
  void render(std::string& out, std::string_view name, std::string_view labels = {}) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(std::string_view endpoint, int status);
  void count_translated(int64_t sentences, int64_t source_tokens, int64_t target_tokens);
  void observe_batch(int64_t sentences);
  void observe_latency(std::string_view endpoint, double seconds);
  // Everything, with two gauges: the queue's length (sentences waiting) and the
  // translate/score requests being answered.
  std::string render(int64_t queued_sentences, int64_t requests_in_flight = 0) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> requests_;  // (endpoint, status) -> count
  int64_t sentences_ = 0, source_tokens_ = 0, target_tokens_ = 0;
  Histogram batch_sizes_;
  std::map<std::string, Histogram> latency_;  // per endpoint
};

}  // namespace qkv::serve
