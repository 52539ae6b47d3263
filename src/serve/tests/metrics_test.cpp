#include "qkv/serve/metrics.h"

#include <gtest/gtest.h>

namespace qkv::serve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, RendersCountersGaugeAndCumulativeHistograms) {
  Metrics m;
  m.count_request("/translate", 200);
  m.count_request("/translate", 200);
  m.count_request("/translate", 400);
  m.count_translated(3, 12, 15);
  m.observe_batch(3);
  m.observe_batch(20);
  m.observe_latency("/translate", 0.004);
  m.observe_latency("/translate", 3.0);
  const std::string text = m.render(7);
  EXPECT_TRUE(has_line(text, R"(qkv_requests_total{endpoint="/translate",status="200"} 2)"));
  EXPECT_TRUE(has_line(text, R"(qkv_requests_total{endpoint="/translate",status="400"} 1)"));
  EXPECT_TRUE(has_line(text, "qkv_sentences_total 3"));
  EXPECT_TRUE(has_line(text, R"(qkv_tokens_total{side="source"} 12)"));
  EXPECT_TRUE(has_line(text, "qkv_queue_sentences 7"));
  EXPECT_TRUE(has_line(text, R"(qkv_batch_sentences_bucket{le="2"} 0)"));
  EXPECT_TRUE(has_line(text, R"(qkv_batch_sentences_bucket{le="4"} 1)"));
  EXPECT_TRUE(has_line(text, R"(qkv_batch_sentences_bucket{le="32"} 2)"));
  EXPECT_TRUE(has_line(text, R"(qkv_batch_sentences_bucket{le="+Inf"} 2)"));
  EXPECT_TRUE(has_line(text, "qkv_batch_sentences_sum 23"));
  EXPECT_TRUE(has_line(text, R"(qkv_request_seconds_bucket{endpoint="/translate",le="0.005"} 1)"));
  EXPECT_TRUE(has_line(text, R"(qkv_request_seconds_bucket{endpoint="/translate",le="5"} 2)"));
  EXPECT_TRUE(has_line(text, R"(qkv_request_seconds_count{endpoint="/translate"} 2)"));
}

}  // namespace
}  // namespace qkv::serve
