// The server's requests as typed values, parsed and validated from their JSON bodies with
// errors that name the field: what `qkv serve` (and any other HTTP binding) accepts.
//
// POST /translate is LibreTranslate's request ({"q": "..." | [...], "source", "target",
// "format": "text", "api_key"}) plus qkv's own fields: model, beam_size, n_best, alignment
// ("hard" | "soft"), alignment_layer, alignment_head, attention, scores. POST /score takes
// {"q": ..., "translation": ... (as many), "model", "api_key"}.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::serve {

// A request the server refuses: the HTTP status (400 malformed, 413 too large, 401 no key)
// and the field at fault ("q[2]", "beam_size"; "" for the body as a whole).
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, std::string field, const std::string& message)
      : std::runtime_error(message), status_(status), field_(std::move(field)) {}
  int status() const noexcept { return status_; }
  const std::string& field() const noexcept { return field_; }

 private:
  int status_;
  std::string field_;
};

// What one request may hold; beyond these 413.
struct Limits {
  int64_t body_bytes = int64_t{1} << 20;  // the request body
  int64_t sentences = 128;                // entries of q
  int64_t sentence_bytes = 4096;          // one entry of q (or translation)
  int64_t beam_size = 32;                 // beam_size (400 above: a bad value, not a size)
};

struct TranslateRequest {
  std::vector<std::string> q;  // the sentences
  bool q_is_list = false;      // q was an array: translatedText is one too
  std::string source, target;  // language codes as given ("" absent; "auto" allowed)
  std::string model;           // a model name; "" absent
  std::string api_key;         // "" absent
  int64_t beam_size = 5;       // qkv translate's defaults
  std::optional<int64_t> n_best;
  std::optional<std::string> alignment;  // "hard" | "soft"
  int64_t alignment_layer = -1, alignment_head = -1;
  bool attention = false;  // every layer's and head's weights with the token strings
  bool scores = false;     // score and log_prob of each hypothesis
  // Whether the answer carries per-sentence details (anything beyond the text).
  bool wants_details() const { return n_best || alignment || attention || scores; }
};

struct ScoreRequest {
  std::vector<std::string> q, translation;  // pairs (q[i], translation[i])
  bool q_is_list = false;
  std::string model, api_key;
};

// RequestError (400) for a body that is not a JSON object, a field of the wrong type or
// value, an unknown field, invalid UTF-8 (naming the field it is in) or a sentence with a
// control character; 413 past `limits`. Neither checks the model (Service does).
TranslateRequest parse_translate_request(std::string_view body, const Limits& limits);
ScoreRequest parse_score_request(std::string_view body, const Limits& limits);

// {"error": message, "field": field}: the body of every refusal.
std::string error_body(std::string_view message, std::string_view field = {});

}  // namespace qkv::serve
