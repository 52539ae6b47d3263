#include "qkv/experiment/variant.h"

#include <algorithm>

#include "qkv/base/error.h"
#include "qkv/base/format.h"

namespace qkv::experiment {
namespace {

constexpr const char* kForms =
    "rnn:none, rnn:dot, rnn:scaled-dot, rnn:cosine, rnn:general, rnn:additive, transformer "
    "or transformer:h<N> (N heads)";

Variant parse_one(const std::string& entry, std::string_view flag) {
  QKV_CHECK(!entry.empty(), ConfigError, flag, ": an empty entry in the list; write e.g. ",
            "rnn:none,rnn:additive,transformer");
  const size_t colon = entry.find(':');
  const std::string type = entry.substr(0, colon);
  const std::string attention = colon == std::string::npos ? "" : entry.substr(colon + 1);
  Variant v{.name = entry};
  if (type == "transformer") {
    v.type = models::ModelType::Transformer;
    v.attention = models::AttentionKind::ScaledDot;
    v.name = "transformer";
    if (attention.empty() || attention == "scaled-dot") return v;
    // transformer:h<N>: digits only, so "h08" and "h+8" do not name the same variant twice.
    const std::string digits =
        attention.size() > 1 && attention[0] == 'h' ? attention.substr(1) : "";
    const bool number = !digits.empty() && digits.size() <= 6 && digits[0] != '0' &&
                        digits.find_first_not_of("0123456789") == std::string::npos;
    QKV_CHECK(number, ConfigError, flag, " ", entry,
              ": a transformer variant is `transformer` or `transformer:h<N>` with N heads "
              "(e.g. transformer:h8); it always uses scaled-dot attention");
    v.heads = std::stoll(digits);
    v.name = "transformer:h" + digits;
    return v;
  }
  QKV_CHECK(type == "rnn", ConfigError, flag, " ", entry, ": unknown model type '", type,
            "'; the variants are ", kForms);
  QKV_CHECK(!attention.empty(), ConfigError, flag, " ", entry,
            ": say which attention the rnn uses, e.g. rnn:additive (rnn:none for none)");
  try {
    v.attention = models::parse_attention_kind(attention);
  } catch (const ConfigError&) {
    QKV_THROW(ConfigError, flag, " ", entry, ": unknown attention '", attention,
              "'; the variants are ", kForms);
  }
  return v;
}

}  // namespace

std::string Variant::file_name() const {
  std::string s = name;
  std::replace(s.begin(), s.end(), ':', '-');
  return s;
}

bool Variant::attends() const noexcept {
  models::ModelConfig config;
  config.type = type;
  config.attention = attention;
  return models::attends(config);
}

std::vector<Variant> parse_variants(std::string_view list, std::string_view flag) {
  QKV_CHECK(!trim_blanks(list).empty(), ConfigError, flag,
            ": no variants; write e.g. rnn:none,rnn:additive,transformer");
  std::vector<Variant> out;
  size_t begin = 0;
  while (true) {
    const size_t comma = list.find(',', begin);
    const Variant v = parse_one(std::string(trim_blanks(list.substr(begin, comma - begin))), flag);
    for (const Variant& seen : out)
      QKV_CHECK(seen.name != v.name, ConfigError, flag, ": ", v.name,
                " is listed twice; each variant is trained once");
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return out;
}

}  // namespace qkv::experiment
