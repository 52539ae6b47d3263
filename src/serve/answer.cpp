#include "answer.h"

#include "qkv/base/field_error.h"
#include "qkv/decode/alignment.h"
#include "qkv/models/config.h"

namespace qkv::serve {
namespace {

using nlohmann::json;

// Replacement of invalid UTF-8 in strings never happens for our own text (pieces and
// translations are valid UTF-8); dumping with `replace` keeps a surprise from throwing.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// attention_maps' weights as [layers][heads][target][source] nested arrays.
json attention_json(const decode::AttentionMaps& maps) {
  const size_t rows = maps.target_tokens.size(), cols = maps.source_tokens.size();
  json layers = json::array();
  size_t at = 0;
  for (int64_t l = 0; l < maps.layers; ++l) {
    json heads = json::array();
    for (int64_t h = 0; h < maps.heads; ++h) {
      json matrix = json::array();
      for (size_t t = 0; t < rows; ++t, at += cols)
        matrix.push_back(std::vector<float>(maps.weights.begin() + ptrdiff_t(at),
                                            maps.weights.begin() + ptrdiff_t(at + cols)));
      heads.push_back(std::move(matrix));
    }
    layers.push_back(std::move(heads));
  }
  return json{{"layers", maps.layers},
              {"heads", maps.heads},
              {"source_tokens", maps.source_tokens},
              {"target_tokens", maps.target_tokens},
              {"weights", std::move(layers)}};
}

json hypothesis_json(const decode::Translator& tr, const TranslateRequest& request,
                     const decode::SentenceResult& sentence,
                     const decode::TranslatedHypothesis& h) {
  json out{{"text", h.text}};
  if (request.scores) {
    out["score"] = h.score;
    out["log_prob"] = h.log_prob;
    out["finished"] = h.finished;
  }
  if (request.alignment) {
    // What `qkv translate --alignment` appends after " ||| ", from the same calls.
    const auto words = decode::word_attention(tr.vocab(), sentence.source, h.tokens, h.attention);
    out["alignment"] = *request.alignment == "hard" ? decode::hard_alignment(words)
                                                    : decode::soft_alignment(words);
    out["source_words"] = words ? words->source : std::vector<std::string>{};
    out["target_words"] = words ? words->target : std::vector<std::string>{};
  }
  if (request.attention) out["attention"] = attention_json(tr.attention_maps(sentence, h));
  return out;
}

json details_json(const decode::Translator& tr, const TranslateRequest& request,
                  const decode::SentenceResult& r) {
  json hypotheses = json::array();
  if (!r.ok())
    return json{{"skipped", decode::describe(r.skipped, r.token_count, r.token_limit)},
                {"hypotheses", std::move(hypotheses)}};
  for (const decode::TranslatedHypothesis& h : r.hypotheses)
    hypotheses.push_back(hypothesis_json(tr, request, r, h));
  return json{{"hypotheses", std::move(hypotheses)}};
}

}  // namespace

decode::TranslateOptions translate_options(const TranslateRequest& request,
                                           const models::ModelConfig& config) {
  decode::TranslateOptions o;
  o.search.beam_size = request.beam_size;
  o.search.n_best = request.n_best.value_or(1);
  o.max_length = 1000;
  // As qkv translate: scores only when shown, so beam 1 without them takes the greedy path.
  o.scores = request.n_best.has_value() || request.scores;
  const bool attends = models::attends(config);
  if (request.alignment && !attends)
    throw RequestError(400, "alignment",
                       "field 'alignment': the model is an rnn without attention, which aligns "
                       "nothing");
  if (request.attention && !attends)
    throw RequestError(400, "attention",
                       "field 'attention': the model is an rnn without attention");
  o.search.keep_attention = request.alignment.has_value();
  o.search.attention = {request.alignment_layer, request.alignment_head};
  try {  // the request's fields are the options' fields: the library names them
    decode::validate(o.search, config);
  } catch (const FieldError& e) {
    const std::vector<std::string> fields = e.fields();
    throw RequestError(
        400, fields.empty() ? std::string() : fields.front(),
        "field " + e.render([](std::string_view f) { return "'" + std::string(f) + "'"; }));
  }
  o.memory_advice = "send fewer or shorter sentences per request, or a smaller beam_size";
  return o;
}

std::string search_key(const decode::TranslateOptions& o) {
  const decode::BeamSearchOptions& s = o.search;
  return std::to_string(s.beam_size) + " " + std::to_string(s.n_best) + " " +
         std::to_string(s.keep_attention) + " " + std::to_string(s.attention.layer) + " " +
         std::to_string(s.attention.head) + " " + std::to_string(o.scores);
}

std::string translation_body(const decode::Translator& tr, const TranslateRequest& request,
                             std::span<const decode::SentenceResult> results) {
  json texts = json::array();
  json details = json::array();
  for (const decode::SentenceResult& r : results) {
    texts.push_back(r.ok() ? r.hypotheses.front().text : std::string());
    if (request.wants_details()) details.push_back(details_json(tr, request, r));
  }
  json out{{"translatedText", request.q_is_list ? texts : texts.at(0)}};
  if (request.wants_details()) out["details"] = request.q_is_list ? details : details.at(0);
  return dump(out);
}

std::string score_body(const ScoreRequest& request, std::span<const decode::ScoreResult> results) {
  json scores = json::array();
  for (const decode::ScoreResult& r : results) {
    if (!r.ok()) {
      scores.push_back(
          json{{"skipped", decode::describe(r.skipped, r.token_count, r.token_limit)}});
      continue;
    }
    const auto tokens = int64_t(r.token_log_probs.size());  // the target's tokens and EOS
    scores.push_back(json{
        {"log_prob", r.log_prob}, {"per_token", r.log_prob / double(tokens)}, {"tokens", tokens}});
  }
  return dump(json{{"scores", request.q_is_list ? scores : scores.at(0)}});
}

json model_description(const std::string& name, const std::pair<std::string, std::string>& pair,
                       const decode::Translator& tr) {
  const models::ModelConfig& c = tr.model().config();
  return json{{"name", name},
              {"path", tr.file().string()},
              {"source", pair.first.empty() ? json(nullptr) : json(pair.first)},
              {"target", pair.second.empty() ? json(nullptr) : json(pair.second)},
              {"type", models::to_string(c.type)},
              {"attends", models::attends(c)},
              {"update", tr.info().update},
              {"config", json::parse(models::to_json(c))}};
}

}  // namespace qkv::serve
