// Validation and subword merging of attention maps.
#include "qkv/viz/heatmap.h"

#include <cmath>

#include "detail/map.h"
#include "detail/text.h"
#include "qkv/base/error.h"

namespace qkv::viz {
namespace detail {

std::string map_name(const AttentionMap& map) {
  return map.title.empty() ? std::string("attention map") : "attention map '" + map.title + "'";
}

}  // namespace detail

namespace {

constexpr float kMaxWeight = 1.0f + 1e-3f;          // slack for float sums of merged pieces
constexpr std::string_view kWordMarker = "\u2581";  // SentencePiece's "▁"

void check_labels(const std::string& name, const std::vector<std::string>& labels,
                  const char* side) {
  for (size_t i = 0; i < labels.size(); ++i)
    detail::check_utf8(labels[i], qkv::detail::concat(name, ": ", side, " token ", i));
}

bool is_special(const std::string& token) {
  return token.size() >= 3 && token.front() == '<' && token.back() == '>';
}

// Indices of the first token of each word: starts[i] marks a word start, token 0 always.
std::vector<size_t> word_begins(const std::vector<bool>& starts) {
  std::vector<size_t> begins;
  for (size_t i = 0; i < starts.size(); ++i)
    if (i == 0 || starts[i]) begins.push_back(i);
  return begins;
}

std::vector<std::string> join_words(const std::vector<std::string>& tokens,
                                    const std::vector<size_t>& begins) {
  std::vector<std::string> words;
  for (size_t w = 0; w < begins.size(); ++w) {
    const size_t end = w + 1 < begins.size() ? begins[w + 1] : tokens.size();
    std::string word;
    for (size_t i = begins[w]; i < end; ++i) {
      std::string_view piece = tokens[i];
      if (piece.starts_with(kWordMarker)) piece.remove_prefix(kWordMarker.size());
      word += piece;
    }
    words.push_back(std::move(word));
  }
  return words;
}

}  // namespace

void validate(const AttentionMap& map) {
  detail::check_utf8(map.title, "attention map title");
  const std::string name = detail::map_name(map);
  QKV_CHECK(!map.source.empty() && !map.target.empty(), ValueError, name, " is empty (",
            map.target.size(), " target tokens, ", map.source.size(),
            " source tokens); a heatmap needs at least one of each");
  const size_t rows = map.target.size(), cols = map.source.size();
  QKV_CHECK(map.weights.size() == rows * cols, ValueError, name, ": weights has ",
            map.weights.size(), " values, but ", rows, " target tokens (rows) x ", cols,
            " source tokens (columns) need ", rows * cols);
  check_labels(name, map.source, "source");
  check_labels(name, map.target, "target");
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      const float w = map.weights[r * cols + c];
      const bool ok = std::isfinite(w) && w >= 0.0f && w <= kMaxWeight;
      if (ok) [[likely]]
        continue;
      const char* what = std::isnan(w)   ? "is NaN"
                         : std::isinf(w) ? "is infinite"
                         : w < 0.0f      ? "is negative"
                                         : "is above 1";
      QKV_THROW(ValueError, name, ": weight at row ", r, " (target '", map.target[r], "'), column ",
                c, " (source '", map.source[c], "') ", what, " (", w,
                "); attention weights lie in [0, 1]");
    }
  }
}

std::vector<bool> sentencepiece_word_starts(const std::vector<std::string>& tokens) {
  std::vector<bool> starts(tokens.size(), false);
  for (size_t i = 0; i < tokens.size(); ++i) {
    starts[i] = i == 0 || tokens[i].starts_with(kWordMarker) || is_special(tokens[i]) ||
                is_special(tokens[i - 1]);
  }
  return starts;
}

AttentionMap merge_subwords(const AttentionMap& map, const std::vector<bool>& source_word_starts,
                            const std::vector<bool>& target_word_starts) {
  validate(map);
  const std::string name = detail::map_name(map);
  QKV_CHECK(source_word_starts.size() == map.source.size(), ValueError, "merge_subwords: ", name,
            " has ", map.source.size(), " source tokens but ", source_word_starts.size(),
            " source word-start flags");
  QKV_CHECK(target_word_starts.size() == map.target.size(), ValueError, "merge_subwords: ", name,
            " has ", map.target.size(), " target tokens but ", target_word_starts.size(),
            " target word-start flags");
  const std::vector<size_t> src = word_begins(source_word_starts);
  const std::vector<size_t> tgt = word_begins(target_word_starts);
  const size_t cols = map.source.size();
  AttentionMap out{.source = join_words(map.source, src),
                   .target = join_words(map.target, tgt),
                   .weights = std::vector<float>(src.size() * tgt.size(), 0.0f),
                   .title = map.title};
  // Sum in double: a word of many pieces must not lose mass to float rounding.
  std::vector<double> row(src.size());
  for (size_t w = 0; w < tgt.size(); ++w) {
    const size_t r_end = w + 1 < tgt.size() ? tgt[w + 1] : map.target.size();
    std::fill(row.begin(), row.end(), 0.0);
    for (size_t r = tgt[w]; r < r_end; ++r) {
      size_t word = 0;
      for (size_t c = 0; c < cols; ++c) {
        if (word + 1 < src.size() && c == src[word + 1]) ++word;
        row[word] += map.weights[r * cols + c];
      }
    }
    const double pieces = static_cast<double>(r_end - tgt[w]);
    for (size_t v = 0; v < src.size(); ++v)
      out.weights[w * src.size() + v] = static_cast<float>(row[v] / pieces);
  }
  return out;
}

char32_t shade_for(float weight) {
  static constexpr char32_t kShades[] = {U' ', U'\u2591', U'\u2592', U'\u2593', U'\u2588'};
  if (std::isnan(weight) || weight < 0.125f) return kShades[0];
  if (weight < 0.375f) return kShades[1];
  if (weight < 0.625f) return kShades[2];
  if (weight < 0.875f) return kShades[3];
  return kShades[4];
}

}  // namespace qkv::viz
