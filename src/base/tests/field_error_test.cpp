#include "qkv/base/field_error.h"

#include <gtest/gtest.h>

namespace qkv {
namespace {

std::string flag(std::string_view field) {
  std::string f = "--" + std::string(field);
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

TEST(FieldError, WhatNamesTheBareFieldsAndRenderNamesThemAsAFrontEndAsks) {
  try {
    QKV_THROW(FieldError, "{heads} ", 3, " must divide {dim_emb} ", 256);
  } catch (const FieldError& e) {
    EXPECT_STREQ(e.what(), "heads 3 must divide dim_emb 256");
    EXPECT_EQ(e.render(flag), "--heads 3 must divide --dim-emb 256");
    EXPECT_EQ(e.marked_text(), "{heads} 3 must divide {dim_emb} 256");
  }
}

TEST(FieldError, IsAConfigErrorAndFieldIoErrorAnIoError) {
  EXPECT_THROW(QKV_THROW(FieldError, "{a}"), ConfigError);
  EXPECT_THROW(QKV_THROW(FieldIoError, "{out}: cannot create"), IoError);
  try {
    QKV_THROW(FieldIoError, "{out} x: cannot create");
  } catch (const FieldMessage& e) {  // one catch renders both kinds
    EXPECT_EQ(e.render(flag), "--out x: cannot create");
  }
}

TEST(FieldError, TextWithoutACompleteMarkStaysAsItIs) {
  EXPECT_EQ(plain_fields("no marks"), "no marks");
  EXPECT_EQ(plain_fields("{open"), "{open");
  EXPECT_EQ(plain_fields("a {b} c {d"), "a b c {d");
  // Braces around anything but a field name are text: a model's JSON config, a path.
  EXPECT_EQ(plain_fields("{reuse}: holds {\"type\": \"rnn\"}"), "reuse: holds {\"type\": \"rnn\"}");
  EXPECT_EQ(plain_fields("/tmp/{A b}/{}"), "/tmp/{A b}/{}");
}

TEST(FieldError, FieldsListsTheMarksInOrderAndNothingElse) {
  const FieldMessage m("{n_best} 5 exceeds {beam_size} 4; raise {beam_size} ({\"x\": 1})");
  EXPECT_EQ(m.fields(), (std::vector<std::string>{"n_best", "beam_size", "beam_size"}));
  EXPECT_TRUE(FieldMessage("no marks {A}").fields().empty());
}

}  // namespace
}  // namespace qkv
