// --help lists every option with its metavar, help, choices, range and default, wrapped.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cli_test_util.h"

namespace qkv::cli {
namespace {

using test_util::train_like;

// Whether `part` occurs in `text` once line breaks and indentation are read as one space
// (the help column wraps wherever the width says).
bool contains(const std::string& text, const std::string& part) {
  std::string flat;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !flat.empty() && flat.back() == ' ') continue;
    flat += space ? ' ' : c;
  }
  return flat.find(part) != std::string::npos || text.find(part) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CliHelp, ListsEveryOptionWithItsDefault) {
  const OptionSet set = train_like();
  const std::string help = set.format_help("qkv", "train", "Trains a model.");
  EXPECT_TRUE(help.starts_with("Usage: qkv train [options]\n\nTrains a model.\n")) << help;
  for (const Option& o : set.options()) {
    EXPECT_TRUE(contains(help, "--" + o.name() + " " + o.display_metavar()) ||
                (o.type() == OptionType::Switch && contains(help, "--" + o.name() + " ")))
        << o.name() << "\n"
        << help;
  }
  for (const std::string part : {"-c, --config FILE",
                                 "-h, --help",
                                 "-b, --beam-size INT",
                                 "-o, --output PATH",
                                 "--dim-emb INT",
                                 "--learn-rate FLOAT",
                                 "--train-sets STRING...",
                                 "--type CHOICE",
                                 "--after VALUE",
                                 "--name STRING",
                                 "Size of the embedding vectors.",
                                 "(range [1, 65536]; default: 512)",
                                 "(range [1, 1000]; default: 6)",
                                 "(range >= 0; default: 0.0003)",
                                 "(range [0, 1]; default: 0.1)",
                                 "(default: 0)",
                                 "(default: run)",
                                 "(default: -)",
                                 "default: cross-entropy bleu",
                                 "(one of: transformer, s2s, rnn; default: transformer)",
                                 "Continue from the last"})
    EXPECT_TRUE(contains(help, part)) << "'" << part << "' not in:\n" << help;
  EXPECT_FALSE(contains(help, "default: false"));  // an off switch needs no default
}

TEST(CliHelp, RequiredAndPositionals) {
  OptionSet set;
  set.add_list("inputs", {}, "Files to read.").required();
  set.allow_positionals("FILE", "More files.");
  const std::string help = set.format_help("qkv", "score", "");
  EXPECT_TRUE(help.starts_with("Usage: qkv score [options] [FILE...]\n")) << help;
  EXPECT_NE(help.find("Arguments:\n  FILE..."), std::string::npos) << help;
  EXPECT_TRUE(contains(help, "Files to read. (required)")) << help;
}

TEST(CliHelp, WrapsToTheWidthAndAlignsTheHelpColumn) {
  OptionSet set = train_like();
  set.add_int("a-very-long-option-name", 1,
              "This help text is long enough to need several lines when it is wrapped to a "
              "narrow width, so every line must stay within the limit and continue aligned.");
  for (const int width : {40, 60, 80, 120}) {
    SCOPED_TRACE(width);
    const std::string help = set.format_help(
        "qkv", "train", std::string(30, 'x') + " words that wrap " + std::string(5, 'y'), width);
    const std::vector<std::string> lines = lines_of(help);
    const auto options = std::find(lines.begin(), lines.end(), "Options:");
    ASSERT_NE(options, lines.end()) << help;
    std::set<size_t> help_columns;
    for (auto it = options + 1; it != lines.end(); ++it) {
      const std::string& line = *it;
      EXPECT_LE(line.size(), static_cast<size_t>(width)) << "'" << line << "'\n" << help;
      const size_t first = line.find_first_not_of(' ');
      if (line[first] == '-') {
        EXPECT_TRUE(first == 2 || first == 6) << "'" << line << "'\n" << help;
        const size_t text = line.find_first_not_of(' ', line.find("  ", first));
        if (text != std::string::npos) help_columns.insert(text);  // help beside the flag
      } else {
        help_columns.insert(first);  // a continuation line
      }
    }
    EXPECT_EQ(help_columns.size(), 1u) << help;  // one help column for every option
    // The long flag stands alone; its help starts on the next line, in the help column.
    const auto flag = std::find(lines.begin(), lines.end(), "      --a-very-long-option-name INT");
    ASSERT_NE(flag, lines.end()) << help;
    EXPECT_EQ((flag + 1)->find("This help"), *help_columns.begin()) << help;
  }
}

}  // namespace
}  // namespace qkv::cli
