#include "qkv/serve/request.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <span>

#include "qkv/data/text_file.h"

namespace qkv::serve {
namespace {

using nlohmann::json;

// Follows a SAX parse to say where in the document it failed: "q[2]", "beam_size", or ""
// at the top. nlohmann's own error gives a byte offset only.
class PathTracker : public nlohmann::json_sax<json> {
 public:
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array)
        out += "[" + std::to_string(f.next) + "]";
      else if (f.in_value)
        out += (out.empty() ? "" : ".") + f.key;
    }
    return out;
  }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    frames_.back().in_value = true;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::string key;
    bool in_value = false;  // object: between `key` and the end of its value
    int64_t next = 0;       // array: elements completed
  };
  bool value() {
    if (frames_.empty()) return true;
    if (frames_.back().array)
      ++frames_.back().next;
    else
      frames_.back().in_value = false;
    return true;
  }
  bool open(bool array) {
    frames_.push_back({array, {}, false, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  std::vector<Frame> frames_;
};

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string plain_message(const std::string& what) {
  const size_t end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2)
                                                                            : what;
}

json parse_object(std::string_view body, const Limits& limits) {
  if (int64_t(body.size()) > limits.body_bytes)
    throw RequestError(413, "",
                       "the request body has " + std::to_string(body.size()) +
                           " bytes, more than the " + std::to_string(limits.body_bytes) +
                           " allowed");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    PathTracker tracker;
    json::sax_parse(body, &tracker);
    const std::string field = tracker.path();
    throw RequestError(400, field,
                       "malformed JSON" + (field.empty() ? "" : " in field '" + field + "'") +
                           ": " + plain_message(e.what()));
  }
  if (!j.is_object())
    throw RequestError(400, "",
                       "the request body must be a JSON object, not " + std::string(j.type_name()));
  return j;
}

void refuse_unknown_fields(const json& j, std::span<const std::string_view> known) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw RequestError(400, key, "unknown field '" + key + "'; the fields are: " + list);
  }
}

std::string get_string(const json& j, const std::string& field) {
  if (!j.contains(field)) return {};
  const json& v = j.at(field);
  if (!v.is_string())
    throw RequestError(400, field, "field '" + field + "' must be a string, not " + v.type_name());
  return v.get<std::string>();
}

std::optional<int64_t> get_int(const json& j, const std::string& field, int64_t lo, int64_t hi) {
  if (!j.contains(field)) return std::nullopt;
  const json& v = j.at(field);
  if (!v.is_number_integer())
    throw RequestError(400, field,
                       "field '" + field + "' must be an integer, not " +
                           (v.is_number() ? v.dump() : std::string(v.type_name())));
  const int64_t n = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (n < lo || n > hi)
    throw RequestError(400, field,
                       "field '" + field + "' is " + std::to_string(n) + "; it must be in " +
                           std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

bool get_bool(const json& j, const std::string& field) {
  if (!j.contains(field)) return false;
  const json& v = j.at(field);
  if (!v.is_boolean())
    throw RequestError(400, field,
                       "field '" + field + "' must be true or false, not " + v.type_name());
  return v.get<bool>();
}

// The sentence rules of `qkv translate`'s lines (data::find_line_issue: no control
// characters but tab), and the length limit.
void check_sentence(const std::string& text, const std::string& field, const Limits& limits) {
  if (int64_t(text.size()) > limits.sentence_bytes)
    throw RequestError(413, field,
                       "field '" + field + "' has " + std::to_string(text.size()) +
                           " bytes, more than the " + std::to_string(limits.sentence_bytes) +
                           " allowed per sentence");
  if (const auto issue = data::find_line_issue(text))
    throw RequestError(400, field, "field '" + field + "': " + issue->what);
}

// q (or translation): a string or an array of strings, within the limits.
std::vector<std::string> get_sentences(const json& j, const std::string& field, bool required,
                                       const Limits& limits, bool* is_list) {
  if (!j.contains(field)) {
    if (required) throw RequestError(400, field, "field '" + field + "' is missing");
    return {};
  }
  const json& v = j.at(field);
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
    check_sentence(out.back(), field, limits);
    if (is_list != nullptr) *is_list = false;
    return out;
  }
  if (!v.is_array())
    throw RequestError(
        400, field,
        "field '" + field + "' must be a string or an array of strings, not " + v.type_name());
  if (int64_t(v.size()) > limits.sentences)
    throw RequestError(413, field,
                       "field '" + field + "' has " + std::to_string(v.size()) +
                           " sentences, more than the " + std::to_string(limits.sentences) +
                           " allowed per request");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string name = field + "[" + std::to_string(i) + "]";
    if (!v[i].is_string())
      throw RequestError(400, name,
                         "field '" + name + "' must be a string, not " + v[i].type_name());
    out.push_back(v[i].get<std::string>());
    check_sentence(out.back(), name, limits);
  }
  if (is_list != nullptr) *is_list = true;
  return out;
}

}  // namespace

TranslateRequest parse_translate_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body, limits);
  static constexpr std::array<std::string_view, 13> kFields{
      "q",      "source",    "target",          "format",         "api_key",   "model", "beam_size",
      "n_best", "alignment", "alignment_layer", "alignment_head", "attention", "scores"};
  refuse_unknown_fields(j, kFields);
  TranslateRequest r;
  r.q = get_sentences(j, "q", true, limits, &r.q_is_list);
  r.source = get_string(j, "source");
  r.target = get_string(j, "target");
  const std::string format = get_string(j, "format");
  if (!format.empty() && format != "text")
    throw RequestError(400, "format",
                       "field 'format' is '" + format +
                           "'; qkv translates plain text only: "
                           "\"text\"");
  r.api_key = get_string(j, "api_key");
  r.model = get_string(j, "model");
  r.beam_size = get_int(j, "beam_size", 1, limits.beam_size).value_or(r.beam_size);
  r.n_best = get_int(j, "n_best", 1, r.beam_size);
  if (j.contains("alignment")) {
    r.alignment = get_string(j, "alignment");
    if (*r.alignment != "hard" && *r.alignment != "soft")
      throw RequestError(400, "alignment",
                         "field 'alignment' is '" + *r.alignment +
                             "'; it must be \"hard\" or "
                             "\"soft\"");
  }
  r.alignment_layer = get_int(j, "alignment_layer", -1, 1000).value_or(-1);
  r.alignment_head = get_int(j, "alignment_head", -1, 1000).value_or(-1);
  r.attention = get_bool(j, "attention");
  r.scores = get_bool(j, "scores");
  return r;
}

ScoreRequest parse_score_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body, limits);
  static constexpr std::array<std::string_view, 4> kFields{"q", "translation", "model", "api_key"};
  refuse_unknown_fields(j, kFields);
  ScoreRequest r;
  r.q = get_sentences(j, "q", true, limits, &r.q_is_list);
  bool translation_is_list = false;
  r.translation = get_sentences(j, "translation", true, limits, &translation_is_list);
  if (r.translation.size() != r.q.size() || translation_is_list != r.q_is_list)
    throw RequestError(400, "translation",
                       "field 'translation' must have the shape of 'q' (a string for a string, "
                       "an array of as many strings for an array): q has " +
                           std::to_string(r.q.size()) + ", translation " +
                           std::to_string(r.translation.size()));
  r.model = get_string(j, "model");
  r.api_key = get_string(j, "api_key");
  return r;
}

std::string error_body(std::string_view message, std::string_view field) {
  json j{{"error", message}};
  if (!field.empty()) j["field"] = field;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace qkv::serve
