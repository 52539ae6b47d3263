// The translation service behind `qkv serve`, without HTTP: each endpoint takes a request
// body (and the API key a header carried) and returns the reply to send. An HTTP binding
// maps routes to these calls and nothing else, so everything here is tested without
// sockets.
//
// Translation requests go through one BatchQueue: sentences of concurrent requests with the
// same model and search options are decoded as one batch by one of `workers` threads, each
// with its own Translator per model (a Translator runs one call at a time; separately
// loaded ones run concurrently). A sentence decodes the same alone as in any batch
// (beam_search's contract), so batching changes speed only: every answer equals
// `qkv translate`'s output with the same options (beam 5, normalise 0.6, length factor 2,
// at most 1000 source tokens).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qkv/serve/request.h"

namespace qkv::serve {

struct ModelSpec {
  std::string name;  // what requests' "model" field names; "en-de" also gives the language pair
  std::filesystem::path path;  // a model directory or file
};

// "NAME=DIR", or "DIR" named after its directory (DIR itself, or a model file's folder;
// "model" when it has no name). A path that exists is a path, even with '=' in it.
ModelSpec parse_model_spec(const std::string& text);

struct ServiceOptions {
  std::vector<ModelSpec> models;  // >= 1; the first answers requests that name none
  int workers = 1;                // decoding threads, each with its own copy of every model
  std::chrono::microseconds batch_window{5000};  // how long a batch waits for more requests
  int64_t max_batch = 32;                        // sentences decoded together
  int64_t queue_capacity = 1024;                 // sentences waiting at most; then 503
  Limits limits;
  std::chrono::milliseconds timeout{30000};  // a request not answered by then: 504
  std::string api_key;                       // "" none; else every endpoint but /health
  int retry_after_seconds = 1;               // the Retry-After of a 503
};

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// "en-de" -> {"en", "de"}: a name of two language codes (2-3 lowercase letters) joined
// by '-'; else {"", ""} (the pair is unknown and any source/target is accepted).
std::pair<std::string, std::string> language_pair(std::string_view model_name);

class Service {
 public:
  // Loads every model `workers` times (the errors of decode::Translator::load, naming the
  // path); ConfigError for no model, a repeated name or options out of range.
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // POST /translate, POST /score. `header_key`: the key an X-API-Key or
  // "Authorization: Bearer" header gave ("" none); the body's api_key counts as well.
  Reply translate(std::string_view body, std::string_view header_key = {});
  Reply score(std::string_view body, std::string_view header_key = {});
  Reply models(std::string_view header_key = {});   // GET /models
  Reply health();                                   // GET /health (no key needed)
  Reply metrics(std::string_view header_key = {});  // GET /metrics (Prometheus text)
  // For an endpoint of the binding's own (the page): the 401 reply (counted) when a key is
  // needed and `header_key` is not it, else nullopt.
  std::optional<Reply> refuse_without_key(std::string_view header_key);
  // The reply, counted in the metrics, to a request the binding refused itself: 404 (no
  // route for `method` `path`), 413 (a body over limits.body_bytes, not read), else the
  // bare status. Paths no endpoint has share one metrics label, so the metrics cannot grow
  // per URL.
  Reply transport_error(int status, std::string_view method, std::string_view path);

  // Refuses new requests (503), answers every queued one, stops the workers. Idempotent.
  void shutdown();

  const ServiceOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace qkv::serve
