// Private to serve: requests to decoding options, results to JSON answers.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "qkv/decode/translator.h"
#include "qkv/serve/request.h"

namespace qkv::serve {

inline constexpr const char* kNeedKey =
    "this server needs an API key: the api_key field, an X-API-Key header or "
    "\"Authorization: Bearer KEY\"";

// qkv translate's options for the request's fields (its defaults elsewhere); RequestError
// (400) naming the field for alignment/coverage on a model without attention or a layer or
// head the model does not have.
decode::TranslateOptions translate_options(const TranslateRequest& request,
                                           const models::ModelConfig& config);

// Every option that changes what one translate() call does: requests with equal keys may
// share a batch.
std::string search_key(const decode::TranslateOptions& options);

// {"translatedText": ..., "details": ...} for `results` [q.size()], in q's order.
std::string translation_body(const decode::Translator& translator, const TranslateRequest& request,
                             std::span<const decode::SentenceResult> results);

// {"scores": ...}: per pair its raw log-probability, per token and token count.
std::string score_body(const ScoreRequest& request, std::span<const decode::ScoreResult> results);

// One entry of GET /models.
nlohmann::json model_description(const std::string& name,
                                 const std::pair<std::string, std::string>& pair,
                                 const decode::Translator& translator);

}  // namespace qkv::serve
