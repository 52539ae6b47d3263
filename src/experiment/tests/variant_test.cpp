// Variant lists as `qkv compare --variants` takes them.
#include "qkv/experiment/variant.h"

#include <gtest/gtest.h>

#include "qkv/base/error.h"

namespace qkv::experiment {
namespace {

TEST(ParseVariants, ReadsTheFourSystemsInOrder) {
  const auto v = parse_variants("rnn:none,rnn:dot, rnn:additive ,transformer");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].name, "rnn:none");
  EXPECT_EQ(v[0].type, models::ModelType::Rnn);
  EXPECT_EQ(v[0].attention, models::AttentionKind::None);
  EXPECT_FALSE(v[0].attends());
  EXPECT_EQ(v[1].attention, models::AttentionKind::Dot);
  EXPECT_EQ(v[2].name, "rnn:additive");
  EXPECT_EQ(v[2].file_name(), "rnn-additive");
  EXPECT_TRUE(v[2].attends());
  EXPECT_EQ(v[3].type, models::ModelType::Transformer);
  EXPECT_EQ(v[3].attention, models::AttentionKind::ScaledDot);
  EXPECT_EQ(v[3].file_name(), "transformer");
}

TEST(ParseVariants, TransformerMayNameItsAttention) {
  const auto v = parse_variants("transformer:scaled-dot");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].name, "transformer");
}

TEST(ParseVariants, TransformerHeadCounts) {
  const auto v = parse_variants("transformer:h1,transformer:h8,transformer");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "transformer:h1");
  EXPECT_EQ(v[0].heads, 1);
  EXPECT_EQ(v[1].heads, 8);
  EXPECT_EQ(v[1].file_name(), "transformer-h8");
  EXPECT_EQ(v[1].type, models::ModelType::Transformer);
  EXPECT_EQ(v[1].attention, models::AttentionKind::ScaledDot);
  EXPECT_TRUE(v[1].attends());
  EXPECT_EQ(v[2].heads, 0);  // the comparison's --heads
}

void expect_error(const std::string& list, const std::string& part) {
  try {
    parse_variants(list);
    FAIL() << "no error for '" << list << "'";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--variants"), std::string::npos) << e.what();
  }
}

TEST(ParseVariants, RejectsWhatItCannotTrain) {
  expect_error("", "no variants");
  expect_error("rnn:none,,transformer", "empty entry");
  expect_error("lstm:dot", "unknown model type 'lstm'");
  expect_error("rnn", "say which attention");
  expect_error("rnn:bahdanau", "unknown attention 'bahdanau'");
  expect_error("transformer:additive", "always uses scaled-dot");
  expect_error("rnn:dot,rnn:dot", "listed twice");
  for (const char* bad : {"transformer:h0", "transformer:h", "transformer:hx", "transformer:h08",
                          "transformer:8", "transformer:h-2", "transformer:h9999999"})
    expect_error(bad, "transformer:h<N>");
  expect_error("transformer:h4,transformer:h4", "listed twice");
}

}  // namespace
}  // namespace qkv::experiment
