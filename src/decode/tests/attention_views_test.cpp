#include "qkv/decode/attention_views.h"

#include <gtest/gtest.h>

#include "qkv/base/field_error.h"

namespace qkv::decode {
namespace {

models::ModelConfig transformer() {
  models::ModelConfig c;
  c.dec_depth = 2;
  c.heads = 3;
  return c;
}

std::vector<std::string> titles(const std::vector<AttentionView>& views) {
  std::vector<std::string> out;
  for (const AttentionView& v : views) out.push_back(v.title + "|" + v.suffix);
  return out;
}

std::string refusal(std::string_view layer, std::string_view head, const models::ModelConfig& c) {
  try {
    attention_views(layer, head, c);
  } catch (const FieldError& e) {
    return e.marked_text();
  }
  return "accepted";
}

TEST(AttentionViews, DefaultsAreTheLastLayerAndTheMeanOverHeads) {
  const auto views = attention_views("last", "avg", transformer());
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].which.layer, 1);
  EXPECT_EQ(views[0].which.head, -1);
  EXPECT_EQ(titles(views), (std::vector<std::string>{"layer 1, head avg|"}));
}

TEST(AttentionViews, AllIsEveryLayerAndHeadLayersOutermost) {
  EXPECT_EQ(titles(attention_views("all", "1", transformer())),
            (std::vector<std::string>{"layer 0, head 1|.layer-0.head-1",
                                      "layer 1, head 1|.layer-1.head-1"}));
  EXPECT_EQ(attention_views("0", "all", transformer()).size(), 3u);
  EXPECT_EQ(attention_views("all", "all", transformer()).size(), 6u);
}

TEST(AttentionViews, AnRnnHasOneAttention) {
  models::ModelConfig rnn;
  rnn.type = models::ModelType::Rnn;
  rnn.attention = models::AttentionKind::Additive;
  EXPECT_EQ(titles(attention_views("all", "0", rnn)), (std::vector<std::string>{"|"}));
  EXPECT_EQ(refusal("1", "avg", rnn),
            "{layer} 1: the model has 1 attention layer in an rnn (0..0)");
}

TEST(AttentionViews, RefusalsNameTheField) {
  EXPECT_EQ(refusal("5", "avg", transformer()), "{layer} 5: the model has 2 decoder layers (0..1)");
  EXPECT_EQ(refusal("last", "3", transformer()), "{head} 3: the model has 3 heads (0..2)");
  EXPECT_EQ(refusal("last", "first", transformer()),
            "{head} first: must be avg, all, or a 0-based index");
  EXPECT_EQ(refusal("-1", "avg", transformer()),
            "{layer} -1: must be last, all, or a 0-based index");
  EXPECT_FALSE(is_view_spec("123456", "last"));  // more digits than any model has layers
  EXPECT_TRUE(is_view_spec("all", "avg"));
}

}  // namespace
}  // namespace qkv::decode
