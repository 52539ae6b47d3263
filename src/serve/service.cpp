#include "qkv/serve/service.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>

#include "answer.h"
#include "qkv/base/error.h"
#include "qkv/decode/translator.h"
#include "qkv/serve/batch_queue.h"
#include "qkv/serve/metrics.h"

namespace qkv::serve {
namespace detail {

// One request waiting in the queue: a translation or a scoring, answered through `answer`.
// In a named namespace because Service::State (external linkage) holds a queue of them.
struct Job {
  std::string key;  // model and every option that changes the search: equal keys batch
  int64_t size = 0;
  std::atomic<bool> cancelled{false};
  size_t model = 0;
  std::optional<TranslateRequest> translate;
  std::optional<ScoreRequest> score;
  std::promise<Reply> answer;
};

}  // namespace detail

namespace {

using detail::Job;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

Reply json_reply(int status, std::string body) {
  return Reply{status, std::move(body)};
}

Reply refusal(const RequestError& e) {
  return json_reply(e.status(), error_body(e.what(), e.field()));
}

}  // namespace

std::pair<std::string, std::string> language_pair(std::string_view model_name) {
  // A language code: 2-3 lowercase ASCII letters (ISO 639-1 or -3, as LibreTranslate's).
  const auto is_code = [](std::string_view s) {
    return s.size() >= 2 && s.size() <= 3 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  };
  const size_t dash = model_name.find('-');
  if (dash == std::string_view::npos) return {};
  const std::string_view source = model_name.substr(0, dash), target = model_name.substr(dash + 1);
  if (!is_code(source) || !is_code(target)) return {};
  return {std::string(source), std::string(target)};
}

struct Service::State {
  explicit State(ServiceOptions o) : options(std::move(o)) {}

  ServiceOptions options;
  std::vector<std::pair<std::string, std::string>> pairs;    // per model
  std::vector<std::vector<decode::Translator>> translators;  // [worker][model]
  Metrics metrics;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> in_flight{0};  // translate/score calls inside the service
  std::unique_ptr<BatchQueue<Job>> queue;

  bool authorised(std::string_view header_key, std::string_view body_key) const {
    return options.api_key.empty() || header_key == options.api_key || body_key == options.api_key;
  }

  // The model a request names, or the one whose language pair matches, or the first.
  size_t select_model(const std::string& name, const std::string& source,
                      const std::string& target) const {
    const auto& models = options.models;
    if (!name.empty()) {
      for (size_t i = 0; i < models.size(); ++i)
        if (models[i].name == name) return i;
      std::string list;
      for (const ModelSpec& m : models) list += (list.empty() ? "" : ", ") + m.name;
      throw RequestError(400, "model", "no model named '" + name + "'; the models are: " + list);
    }
    const bool given = !source.empty() && source != "auto" && !target.empty();
    if (!given) return 0;
    for (size_t i = 0; i < models.size(); ++i)
      if (pairs[i].first == source && pairs[i].second == target) return i;
    if (models.size() == 1 && pairs[0].first.empty()) return 0;  // a pair it does not name
    const bool source_known =
        std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == source; });
    throw RequestError(400, source_known ? "target" : "source",
                       "no model translates '" + source + "' to '" + target +
                           "'; GET /models lists the language pairs");
  }

  Reply run_job(std::shared_ptr<Job> job) {
    ++in_flight;
    struct Leave {
      std::atomic<int64_t>& n;
      ~Leave() { --n; }
    } leave{in_flight};
    std::future<Reply> answer = job->answer.get_future();
    if (stopping || !queue->try_push(job)) {
      Reply r = json_reply(503, error_body(stopping ? "the server is shutting down"
                                                    : "the queue is full; retry later"));
      r.headers.emplace_back("Retry-After", std::to_string(options.retry_after_seconds));
      return r;
    }
    if (answer.wait_for(options.timeout) == std::future_status::timeout) {
      job->cancelled = true;  // a worker that has not taken it yet never will
      return json_reply(504, error_body("no answer within the request timeout of " +
                                        std::to_string(options.timeout.count()) + " ms"));
    }
    return answer.get();
  }

  void run_batch(int worker, BatchQueue<Job>::Batch& batch) {
    const decode::Translator& tr = translators[size_t(worker)][batch.front()->model];
    int64_t sentences = 0;
    for (const auto& job : batch) sentences += job->size;
    metrics.observe_batch(sentences);
    try {
      if (batch.front()->translate)
        answer_translations(tr, batch);
      else
        answer_scores(tr, batch);
    } catch (const std::exception& e) {  // e.g. ResourceError: the batch does not fit
      for (const auto& job : batch) {
        try {
          job->answer.set_value(json_reply(500, error_body(e.what())));
        } catch (const std::future_error&) {  // answered before the error
        }
      }
    }
  }

  // One translate() call over the batch's sentences, each job answered with its share.
  void answer_translations(const decode::Translator& tr, BatchQueue<Job>::Batch& batch) {
    const TranslateRequest& first = *batch.front()->translate;
    const decode::TranslateOptions o = translate_options(first, tr.model().config());
    std::vector<std::string> sentences;
    for (const auto& job : batch)
      sentences.insert(sentences.end(), job->translate->q.begin(), job->translate->q.end());
    const std::vector<decode::SentenceResult> results = tr.translate(sentences, o);
    int64_t source_tokens = 0, target_tokens = 0;
    for (const decode::SentenceResult& r : results) {
      source_tokens += r.token_count;
      if (r.ok()) target_tokens += int64_t(r.hypotheses.front().tokens.size());
    }
    metrics.count_translated(int64_t(results.size()), source_tokens, target_tokens);
    size_t offset = 0;
    for (const auto& job : batch) {
      const auto mine = std::span(results).subspan(offset, job->translate->q.size());
      offset += mine.size();
      job->answer.set_value(json_reply(200, translation_body(tr, *job->translate, mine)));
    }
  }

  void answer_scores(const decode::Translator& tr, BatchQueue<Job>::Batch& batch) {
    std::vector<std::string> sources, targets;
    for (const auto& job : batch) {
      sources.insert(sources.end(), job->score->q.begin(), job->score->q.end());
      targets.insert(targets.end(), job->score->translation.begin(), job->score->translation.end());
    }
    // qkv score's defaults: at most 1000 tokens a side, 32 pairs together.
    const std::vector<decode::ScoreResult> results =
        tr.score(sources, targets, decode::ScoreOptions{.max_length = 1000});
    size_t offset = 0;
    for (const auto& job : batch) {
      const auto mine = std::span(results).subspan(offset, job->score->q.size());
      offset += mine.size();
      job->answer.set_value(json_reply(200, score_body(*job->score, mine)));
    }
  }

  // Counts the reply and its latency; returns it.
  Reply finish(std::string_view endpoint, Clock::time_point start, Reply reply) {
    metrics.count_request(endpoint, reply.status);
    metrics.observe_latency(endpoint, std::chrono::duration<double>(Clock::now() - start).count());
    return reply;
  }
};

Service::Service(ServiceOptions options) : state_(std::make_unique<State>(std::move(options))) {
  State& s = *state_;
  const ServiceOptions& o = s.options;
  QKV_CHECK(!o.models.empty(), ConfigError, "qkv serve: no model (--model DIR)");
  for (size_t i = 0; i < o.models.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      QKV_CHECK(o.models[i].name != o.models[j].name, ConfigError, "--model: the name '",
                o.models[i].name, "' is given twice; name each model (--model NAME=DIR)");
  QKV_CHECK(o.workers >= 1, ConfigError, "--threads ", o.workers, ": need at least 1");
  for (const ModelSpec& m : o.models) s.pairs.push_back(language_pair(m.name));
  for (int w = 0; w < o.workers; ++w) {
    std::vector<decode::Translator> copies;
    for (const ModelSpec& m : o.models) copies.push_back(decode::Translator::load(m.path));
    s.translators.push_back(std::move(copies));
  }
  s.queue = std::make_unique<BatchQueue<Job>>(
      BatchQueueOptions{.workers = o.workers,
                        .window = o.batch_window,
                        .max_batch = o.max_batch,
                        .capacity = o.queue_capacity},
      [&s](int worker, BatchQueue<Job>::Batch& batch) { s.run_batch(worker, batch); });
}

Service::~Service() {
  shutdown();
}

void Service::shutdown() {
  state_->stopping = true;
  state_->queue->shutdown();
}

const ServiceOptions& Service::options() const {
  return state_->options;
}

Reply Service::transport_error(int status, std::string_view method, std::string_view path) {
  State& s = *state_;
  const std::string what =
      status == 413 ? "the request body is larger than the " +
                          std::to_string(s.options.limits.body_bytes) + " bytes allowed"
      : status == 404 ? "no such endpoint: " + std::string(method) + " " + std::string(path)
                      : "HTTP " + std::to_string(status);
  constexpr std::array<std::string_view, 6> kPaths{"/translate", "/score",   "/models",
                                                   "/health",    "/metrics", "/"};
  const bool known = std::find(kPaths.begin(), kPaths.end(), path) != kPaths.end();
  s.metrics.count_request(known ? path : "other", status);
  return json_reply(status, error_body(what));
}

ModelSpec parse_model_spec(const std::string& text) {
  namespace fs = std::filesystem;
  const size_t eq = text.find('=');
  std::error_code ec;
  if (eq != std::string::npos && eq > 0 && !fs::exists(text, ec))
    return {text.substr(0, eq), text.substr(eq + 1)};
  fs::path path = fs::path(text).lexically_normal();
  if (path.has_filename() && path.filename().string().ends_with(".safetensors"))
    path = path.parent_path();
  const std::string name =
      path.filename().empty() ? path.parent_path().filename().string() : path.filename().string();
  return {name.empty() ? "model" : name, text};
}

Reply Service::translate(std::string_view body, std::string_view header_key) {
  State& s = *state_;
  const Clock::time_point start = Clock::now();
  auto job = std::make_shared<Job>();
  try {
    try {
      job->translate = parse_translate_request(body, s.options.limits);
    } catch (const RequestError&) {
      if (!s.authorised(header_key, {})) throw RequestError(401, "api_key", kNeedKey);
      throw;
    }
    const TranslateRequest& r = *job->translate;
    if (!s.authorised(header_key, r.api_key)) throw RequestError(401, "api_key", kNeedKey);
    job->model = s.select_model(r.model, r.source, r.target);
    const decode::Translator& tr = s.translators[0][job->model];
    job->key = "translate " + std::to_string(job->model) + " " +
               search_key(translate_options(r, tr.model().config()));
  } catch (const RequestError& e) {
    return s.finish("/translate", start, refusal(e));
  }
  job->size = int64_t(job->translate->q.size());
  if (job->size == 0)  // q is []: nothing to decode, answered without queueing
    return s.finish(
        "/translate", start,
        json_reply(200, translation_body(s.translators[0][job->model], *job->translate, {})));
  return s.finish("/translate", start, s.run_job(job));
}

Reply Service::score(std::string_view body, std::string_view header_key) {
  State& s = *state_;
  const Clock::time_point start = Clock::now();
  auto job = std::make_shared<Job>();
  try {
    try {
      job->score = parse_score_request(body, s.options.limits);
    } catch (const RequestError&) {
      if (!s.authorised(header_key, {})) throw RequestError(401, "api_key", kNeedKey);
      throw;
    }
    if (!s.authorised(header_key, job->score->api_key))
      throw RequestError(401, "api_key", kNeedKey);
    job->model = s.select_model(job->score->model, {}, {});
  } catch (const RequestError& e) {
    return s.finish("/score", start, refusal(e));
  }
  job->key = "score " + std::to_string(job->model);
  job->size = int64_t(job->score->q.size());
  if (job->size == 0) return s.finish("/score", start, json_reply(200, R"({"scores":[]})"));
  return s.finish("/score", start, s.run_job(job));
}

Reply Service::models(std::string_view header_key) {
  State& s = *state_;
  const Clock::time_point start = Clock::now();
  if (!s.authorised(header_key, {}))
    return s.finish("/models", start, json_reply(401, error_body(kNeedKey, "api_key")));
  json list = json::array();
  for (size_t i = 0; i < s.options.models.size(); ++i)
    list.push_back(model_description(s.options.models[i].name, s.pairs[i], s.translators[0][i]));
  return s.finish("/models", start, json_reply(200, list.dump()));
}

std::optional<Reply> Service::refuse_without_key(std::string_view header_key) {
  State& s = *state_;
  if (s.authorised(header_key, {})) return std::nullopt;
  s.metrics.count_request("/", 401);
  return json_reply(401, error_body(kNeedKey, "api_key"));
}

Reply Service::health() {
  State& s = *state_;
  const Clock::time_point start = Clock::now();
  const bool up = !s.stopping;
  const json body{{"status", up ? "ok" : "stopping"},
                  {"models", s.options.models.size()},
                  {"workers", s.options.workers}};
  return s.finish("/health", start, json_reply(up ? 200 : 503, body.dump()));
}

Reply Service::metrics(std::string_view header_key) {
  State& s = *state_;
  const Clock::time_point start = Clock::now();
  if (!s.authorised(header_key, {}))
    return s.finish("/metrics", start, json_reply(401, error_body(kNeedKey, "api_key")));
  // Counted before rendering, so a scrape sees itself.
  s.metrics.count_request("/metrics", 200);
  Reply r{200, s.metrics.render(s.queue->queued(), s.in_flight), "text/plain; version=0.0.4"};
  return r;
}

}  // namespace qkv::serve
