#include "qkv/serve/metrics.h"

#include <algorithm>
#include <charconv>

namespace qkv::serve {
namespace {

// The shortest decimal that reads back as `v` ("0.005", not 0.0050000000000000001).
std::string number(double v) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  return std::string(buffer, end);
}

std::string with(std::string_view labels, std::string_view more) {
  std::string out(labels);
  if (!out.empty() && !more.empty()) out += ',';
  out += more;
  return out.empty() ? "" : "{" + out + "}";
}

// Request latency buckets in seconds: 1 ms to 10 s.
const std::vector<double> kLatencyBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kBatchBounds{1, 2, 4, 8, 16, 32, 64, 128};

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket =
      size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += std::string(name) + "_bucket" + with(labels, "le=\"" + le + "\"") + " " +
           std::to_string(cumulative) + "\n";
  }
  out += std::string(name) + "_sum" + with(labels, "") + " " + number(sum_) + "\n";
  out += std::string(name) + "_count" + with(labels, "") + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics() : batch_sizes_(kBatchBounds) {}

void Metrics::count_request(std::string_view endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{std::string(endpoint), status}];
}

void Metrics::count_translated(int64_t sentences, int64_t source_tokens, int64_t target_tokens) {
  std::lock_guard lock(mutex_);
  sentences_ += sentences;
  source_tokens_ += source_tokens;
  target_tokens_ += target_tokens;
}

void Metrics::observe_batch(int64_t sentences) {
  std::lock_guard lock(mutex_);
  batch_sizes_.observe(double(sentences));
}

void Metrics::observe_latency(std::string_view endpoint, double seconds) {
  std::lock_guard lock(mutex_);
  auto it = latency_.find(std::string(endpoint));
  if (it == latency_.end()) it = latency_.emplace(std::string(endpoint), kLatencyBounds).first;
  it->second.observe(seconds);
}

std::string Metrics::render(int64_t queued_sentences, int64_t requests_in_flight) const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP qkv_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE qkv_requests_total counter\n";
  for (const auto& [key, count] : requests_)
    out += "qkv_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  out += "# HELP qkv_sentences_total Sentences translated.\n# TYPE qkv_sentences_total counter\n";
  out += "qkv_sentences_total " + std::to_string(sentences_) + "\n";
  out += "# HELP qkv_tokens_total Subword tokens translated, by side.\n";
  out += "# TYPE qkv_tokens_total counter\n";
  out += "qkv_tokens_total{side=\"source\"} " + std::to_string(source_tokens_) + "\n";
  out += "qkv_tokens_total{side=\"target\"} " + std::to_string(target_tokens_) + "\n";
  out += "# HELP qkv_queue_sentences Sentences waiting for a batch.\n";
  out += "# TYPE qkv_queue_sentences gauge\n";
  out += "qkv_queue_sentences " + std::to_string(queued_sentences) + "\n";
  out += "# HELP qkv_requests_in_flight Translate and score requests being answered.\n";
  out += "# TYPE qkv_requests_in_flight gauge\n";
  out += "qkv_requests_in_flight " + std::to_string(requests_in_flight) + "\n";
  out += "# HELP qkv_batch_sentences Sentences per decoded batch.\n";
  out += "# TYPE qkv_batch_sentences histogram\n";
  batch_sizes_.render(out, "qkv_batch_sentences");
  out += "# HELP qkv_request_seconds Time from a request's arrival to its answer.\n";
  out += "# TYPE qkv_request_seconds histogram\n";
  for (const auto& [endpoint, histogram] : latency_)
    histogram.render(out, "qkv_request_seconds", "endpoint=\"" + endpoint + "\"");
  return out;
}

}  // namespace qkv::serve
