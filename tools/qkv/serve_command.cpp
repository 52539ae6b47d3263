// qkv serve: the translation server. Parses its flags into serve::ServiceOptions and
// HttpOptions and runs serve_http; everything else is the serve library's.
#include <iostream>
#include <memory>

#include "command.h"
#include "qkv/base/error.h"
#include "qkv/cli/options.h"
#include "qkv/serve/service.h"
#include "serve_http.h"
#include "serve_page.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet serve_options() {
  cli::OptionSet o;
  o.add_list("model", {},
             "A model to serve: DIR (a model directory or file; named after its directory) or "
             "NAME=DIR. Repeat for several; the first answers requests that name none. A name "
             "such as en-de gives the model's language pair (LibreTranslate's source/target).")
      .repeatable()
      .required()
      .alias('m')
      .metavar("[NAME=]DIR");
  o.add_string("host", "127.0.0.1",
               "Address to listen on. The default answers this machine only; 0.0.0.0 opens the "
               "server to the network (then also set --api-key).");
  o.add_int("port", 8080, "Port to listen on (0: any free port; the one bound is printed).")
      .range(0, 65535);
  o.add_int("threads", 1,
            "Decoding workers, each with its own copy of every model, each decoding one batch "
            "at a time.")
      .range(1, 64);
  o.add_double("batch-window", 5,
               "Milliseconds a batch waits after its first sentence for sentences of other "
               "requests to join it (0: decode at once).")
      .range(0, 10000);
  o.add_int("max-batch", 32, "Sentences decoded together at most.").range(1, 4096);
  o.add_int("queue-size", 1024,
            "Sentences waiting at most; a request that does not fit is answered 503 with "
            "Retry-After.")
      .range(1, 1e7);
  o.add_int("max-body-bytes", 1 << 20, "Largest request body (413 beyond).").range(64, 1 << 30);
  o.add_int("max-sentences", 128, "Most sentences in one request (413 beyond).").range(1, 1e6);
  o.add_int("max-sentence-bytes", 4096, "Longest sentence in bytes (413 beyond).")
      .range(1, 1 << 24);
  o.add_int("max-beam-size", 32, "Largest beam_size a request may ask for (400 beyond).")
      .range(1, 1000);
  o.add_int("timeout", 30000,
            "Milliseconds a request may wait for its answer; then 504 (its sentences are "
            "dropped if not yet decoding).")
      .range(1, 3.6e6);
  o.add_int("connections", 64, "Connections served at once (HTTP threads).").range(1, 4096);
  o.add_string("api-key", std::nullopt,
               "Require this key on every request but /health: the api_key field, an "
               "X-API-Key header or \"Authorization: Bearer KEY\".");
  return o;
}

serve::ServiceOptions service_options(const cli::ParsedOptions& p) {
  serve::ServiceOptions o;
  for (const std::string& m : p.get_list("model")) o.models.push_back(serve::parse_model_spec(m));
  o.workers = int(p.get<int64_t>("threads"));
  o.batch_window = std::chrono::microseconds(int64_t(p.get<double>("batch-window") * 1000));
  o.max_batch = p.get<int64_t>("max-batch");
  o.queue_capacity = p.get<int64_t>("queue-size");
  o.limits = {.body_bytes = p.get<int64_t>("max-body-bytes"),
              .sentences = p.get<int64_t>("max-sentences"),
              .sentence_bytes = p.get<int64_t>("max-sentence-bytes"),
              .beam_size = p.get<int64_t>("max-beam-size")};
  o.timeout = std::chrono::milliseconds(p.get<int64_t>("timeout"));
  if (p.has("api-key")) o.api_key = p.get<std::string>("api-key");
  return o;
}

// The service with its models loaded; a model that cannot be read is named by its flag.
std::unique_ptr<serve::Service> start_service(const cli::ParsedOptions& p) {
  try {
    return std::make_unique<serve::Service>(service_options(p));
  } catch (const IoError& e) {
    QKV_THROW(IoError, "--model: ", e.what());
  }
}

int serve(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  const std::unique_ptr<serve::Service> started = start_service(p);
  serve::Service& service = *started;
  for (const serve::ModelSpec& m : service.options().models)
    std::cerr << "qkv serve: model " << m.name << ": " << m.path.string() << "\n";
  serve_http(service, HttpOptions{.host = p.get<std::string>("host"),
                                  .port = int(p.get<int64_t>("port")),
                                  .connections = int(p.get<int64_t>("connections")),
                                  .page = serve_page()});
  return kExitOk;
}

}  // namespace

int serve_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"serve", serve_options, serve,
       "Serves models over HTTP: POST /translate (LibreTranslate's API, plus beam_size, "
       "n_best, alignment, attention and scores), POST /score, GET /models, /health, "
       "/metrics, and a web page at / that translates as you type and shows the "
       "attention. Sentences of concurrent requests are decoded together. SIGTERM or "
       "SIGINT stop it after the requests in flight."},
      argc, argv);
}

}  // namespace qkv::tool
