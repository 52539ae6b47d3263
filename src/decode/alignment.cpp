#include "qkv/decode/alignment.h"

#include <charconv>
#include <cmath>

#include "qkv/base/error.h"

namespace qkv::decode {
namespace {

bool special(const data::Vocab& v, int32_t id) {
  return id == v.pad_id() || id == v.bos_id() || id == v.eos_id();
}

// A token that is a word by itself: <unk> and the control tokens.
bool alone(const data::Vocab& v, int32_t id) {
  return id == v.unk_id() || special(v, id);
}

// "0.1235": 4 decimals, locale-independent (to_chars), as the soft alignment writes them.
std::string four_decimals(float value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : value < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, double(value), std::chars_format::fixed, 4);
  return {buf, r.ptr};
}

bool blank(const std::string& label) {
  return label.find_first_not_of(" \t") == std::string::npos;
}

// `map` without rows and columns whose label is blank: a lone "▁" piece merges into a
// word of its own that decoding turns into whitespace, so it is no word of the output.
viz::AttentionMap drop_blank_words(const viz::AttentionMap& map) {
  std::vector<size_t> rows, cols;
  for (size_t r = 0; r < map.target.size(); ++r)
    if (!blank(map.target[r])) rows.push_back(r);
  for (size_t c = 0; c < map.source.size(); ++c)
    if (!blank(map.source[c])) cols.push_back(c);
  viz::AttentionMap out;
  for (const size_t c : cols) out.source.push_back(map.source[c]);
  for (const size_t r : rows) {
    out.target.push_back(map.target[r]);
    for (const size_t c : cols) out.weights.push_back(map.weights[r * map.source.size() + c]);
  }
  return out;
}

}  // namespace

std::vector<bool> word_starts(const data::Vocab& vocab, std::span<const int32_t> ids) {
  std::vector<bool> starts(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    starts[i] =
        i == 0 || vocab.starts_word(ids[i]) || alone(vocab, ids[i]) || alone(vocab, ids[i - 1]);
  return starts;
}

std::optional<viz::AttentionMap> word_map(const data::Vocab& vocab,
                                          std::span<const int32_t> source_ids,
                                          std::span<const int32_t> target_ids,
                                          std::span<const float> rows) {
  const size_t ts = source_ids.size();
  QKV_CHECK(rows.size() >= target_ids.size() * ts, InternalError, "word_map: ", rows.size(),
            " attention values for ", target_ids.size(), " x ", ts);
  std::vector<size_t> cols, kept_rows;
  std::vector<int32_t> src, tgt;
  for (size_t j = 0; j < ts; ++j)
    if (!special(vocab, source_ids[j])) cols.push_back(j), src.push_back(source_ids[j]);
  for (size_t t = 0; t < target_ids.size(); ++t)
    if (!special(vocab, target_ids[t])) kept_rows.push_back(t), tgt.push_back(target_ids[t]);
  if (src.empty() || tgt.empty()) return std::nullopt;
  viz::AttentionMap map;
  map.source = vocab.pieces(src);
  map.target = vocab.pieces(tgt);
  for (const size_t t : kept_rows)
    for (const size_t j : cols) map.weights.push_back(rows[t * ts + j]);
  return viz::merge_subwords(map, word_starts(vocab, src), word_starts(vocab, tgt));
}

std::optional<viz::AttentionMap> word_attention(const data::Vocab& vocab,
                                                std::span<const int32_t> source_ids,
                                                std::span<const int32_t> target_ids,
                                                std::span<const float> rows) {
  const std::optional<viz::AttentionMap> map = word_map(vocab, source_ids, target_ids, rows);
  if (!map) return std::nullopt;
  viz::AttentionMap words = drop_blank_words(*map);
  if (words.source.empty() || words.target.empty()) return std::nullopt;
  return words;
}

std::string hard_alignment(const std::optional<viz::AttentionMap>& words) {
  if (!words) return {};
  std::string out;
  const size_t n = words->source.size();
  for (size_t t = 0; t < words->target.size(); ++t) {
    size_t best = 0;
    for (size_t s = 1; s < n; ++s)
      if (words->weights[t * n + s] > words->weights[t * n + best]) best = s;
    if (!out.empty()) out += ' ';
    out += std::to_string(best) + "-" + std::to_string(t);
  }
  return out;
}

std::string soft_alignment(const std::optional<viz::AttentionMap>& words) {
  if (!words) return {};
  std::string out;
  const size_t n = words->source.size();
  for (size_t t = 0; t < words->target.size(); ++t) {
    if (t > 0) out += ' ';
    for (size_t s = 0; s < n; ++s) {
      if (s > 0) out += ',';
      out += four_decimals(words->weights[t * n + s]);
    }
  }
  return out;
}

viz::AttentionMap token_attention(const data::Vocab& vocab, std::span<const int32_t> source_ids,
                                  std::span<const int32_t> target_ids, std::span<const float> rows,
                                  bool merge) {
  const size_t ts = source_ids.size();
  const size_t steps = rows.size() / std::max<size_t>(ts, 1);
  QKV_CHECK(ts > 0 && steps * ts == rows.size() &&
                (steps == target_ids.size() || steps == target_ids.size() + 1),
            InternalError, "token_attention: ", rows.size(), " attention values for ",
            target_ids.size(), " target and ", ts, " source tokens");
  viz::AttentionMap map;
  map.source = vocab.pieces(source_ids);
  map.target = vocab.pieces(target_ids);
  if (steps > target_ids.size()) map.target.push_back(vocab.piece(vocab.eos_id()));
  map.weights.assign(rows.begin(), rows.end());
  if (!merge) return map;
  std::vector<int32_t> target(target_ids.begin(), target_ids.end());
  if (steps > target_ids.size()) target.push_back(vocab.eos_id());
  return viz::merge_subwords(map, word_starts(vocab, source_ids), word_starts(vocab, target));
}

}  // namespace qkv::decode
