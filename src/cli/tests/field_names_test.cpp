// Field errors of the library as the CLI shows them, and command lines quoted for reports.
#include "qkv/cli/field_names.h"

#include <gtest/gtest.h>

namespace qkv::cli {
namespace {

TEST(FieldNames, AFieldIsSetByTheFlagOfTheSameNameInKebabCase) {
  EXPECT_EQ(flag_for_field("dim_emb"), "--dim-emb");
  EXPECT_EQ(flag_for_field("test_sets"), "--test-sets");
  EXPECT_EQ(flag_for_field("heads"), "--heads");
}

TEST(FieldNames, AFieldWhoseFlagIsNamedOtherwiseIsLookedUp) {
  EXPECT_EQ(flag_for_field("model_dir"), "--model");  // TrainerOptions::model_dir
}

TEST(FieldNames, NamingFlagsTurnsFieldErrorsIntoErrorsNamingFlags) {
  try {
    naming_flags([] { QKV_THROW(FieldError, "{heads} 3 must divide {dim_emb} 16"); });
    FAIL() << "no exception";
  } catch (const FieldError&) {
    FAIL() << "still a FieldError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--heads 3 must divide --dim-emb 16");
  }
  EXPECT_THROW(naming_flags([] { QKV_THROW(FieldIoError, "{out} x: cannot create"); }), IoError);
  try {
    naming_flags([] { QKV_THROW(FieldResourceError, "x; reduce {mini_batch_words}"); });
    FAIL() << "no exception";
  } catch (const FieldResourceError&) {
    FAIL() << "still a FieldResourceError";
  } catch (const ResourceError& e) {
    EXPECT_STREQ(e.what(), "x; reduce --mini-batch-words");
  }
  EXPECT_EQ(naming_flags([] { return 7; }), 7);
}

TEST(ShellQuote, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(shell_quote({"--out", "dir/x", "--title", "it's a test", "--after", "5m,1e"}),
            "--out dir/x --title 'it'\\''s a test' --after 5m,1e");
  EXPECT_EQ(shell_quote({""}), "''");
}

}  // namespace
}  // namespace qkv::cli
