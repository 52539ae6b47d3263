#include "serve_http.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>

#include "qkv/base/error.h"

namespace qkv::tool {
namespace {

// The API key of a request: X-API-Key, "Authorization: Bearer KEY", or ?api_key= (what
// the web page passes on from its own address).
std::string header_key(const httplib::Request& req) {
  if (req.has_header("X-API-Key")) return req.get_header_value("X-API-Key");
  const std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
  return req.has_param("api_key") ? req.get_param_value("api_key") : std::string();
}

void send(httplib::Response& res, const serve::Reply& reply) {
  res.status = reply.status;
  for (const auto& [name, value] : reply.headers) res.set_header(name, value);
  res.set_content(reply.body, reply.content_type);
}

void add_routes(httplib::Server& http, serve::Service& service, std::string_view page) {
  http.Post("/translate", [&](const httplib::Request& req, httplib::Response& res) {
    send(res, service.translate(req.body, header_key(req)));
  });
  http.Post("/score", [&](const httplib::Request& req, httplib::Response& res) {
    send(res, service.score(req.body, header_key(req)));
  });
  http.Get("/models", [&](const httplib::Request& req, httplib::Response& res) {
    send(res, service.models(header_key(req)));
  });
  http.Get("/health",
           [&](const httplib::Request&, httplib::Response& res) { send(res, service.health()); });
  http.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
    send(res, service.metrics(header_key(req)));
  });
  // With --api-key the page is opened as /?api_key=KEY, and passes the key on.
  http.Get("/", [&service, page](const httplib::Request& req, httplib::Response& res) {
    if (const auto refused = service.refuse_without_key(header_key(req)))
      return send(res, *refused);
    res.set_content(std::string(page), "text/html; charset=utf-8");
  });
  // Errors cpp-httplib answers itself (404 no route, 413 a body over the limit, 400 a
  // request it cannot read) get the service's JSON error body and are counted.
  http.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty())  // else the service answered, and counted it
      send(res, service.transport_error(res.status, req.method, req.path));
  });
}

// The last stop signal received (0: none). A handler, not sigwait: threads that libraries
// start before main (OpenBLAS's) do not block signals, and any thread may take one.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop_signal(int signal) {
  stop_signal = signal;
}

// Polls for SIGTERM/SIGINT until `done`. On one: stops accepting (`http`), then has the
// service answer what it holds at once, without waiting out batch windows; a request that
// still reaches it is answered 503.
void watch_signals(httplib::Server& http, serve::Service& service, const std::atomic<bool>& done,
                   std::atomic<bool>& signalled) {
  while (!done) {
    if (const int signal = stop_signal; signal != 0) {
      std::cerr << "qkv serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT")
                << ": stopping (finishing the requests in flight)" << std::endl;
      signalled = true;
      http.stop();
      service.shutdown();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace

void serve_http(serve::Service& service, const HttpOptions& options) {
  httplib::Server http;
  const int connections = options.connections;
  http.new_task_queue = [connections] { return new httplib::ThreadPool(size_t(connections)); };
  http.set_payload_max_length(size_t(service.options().limits.body_bytes));
  // SO_REUSEADDR only: a restarted server rebinds past old connections in TIME_WAIT, but a
  // second server on a port in use fails. cpp-httplib's default, SO_REUSEPORT, would let
  // both listen and split the requests between them.
  http.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Clients that keep their connection (the load test, browsers) keep it for many requests.
  http.set_keep_alive_max_count(10000);
  add_routes(http, service, options.page);
  const int port = options.port == 0
                       ? http.bind_to_any_port(options.host)
                       : (http.bind_to_port(options.host, options.port) ? options.port : -1);
  QKV_CHECK(port > 0, IoError, "--host ", options.host, " --port ", options.port,
            ": cannot listen there (in use, or not an address of this machine); pick another "
            "--port, or 0 for any free one");
  // One write: clients (and tests) wait for this line and read the port from it.
  std::cerr << ("qkv serve: listening on http://" + options.host + ":" + std::to_string(port) +
                "\n")
            << std::flush;
  install_stop_handlers();
  std::atomic<bool> done{false}, signalled{false};
  std::thread watcher([&] { watch_signals(http, service, done, signalled); });
  const bool clean = http.listen_after_bind();
  done = true;
  watcher.join();      // before shutdown(): never two threads in it at once
  service.shutdown();  // (done already after a signal) the workers stop
  QKV_CHECK(clean || signalled, IoError, "qkv serve: the listening socket failed");
  std::cerr << "qkv serve: stopped\n";
}

}  // namespace qkv::tool
