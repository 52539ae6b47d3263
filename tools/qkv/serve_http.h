// `qkv serve`'s HTTP binding: cpp-httplib routes mapped onto serve::Service's endpoints,
// the web page at /, and the signals that stop it. No translation logic here.
#pragma once

#include <string>
#include <string_view>

#include "qkv/serve/service.h"

namespace qkv::tool {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;        // 0: any free port (the one bound is printed)
  int connections = 64;   // connections served at once (cpp-httplib's thread pool)
  std::string_view page;  // the HTML of GET /
};

// Binds host:port (IoError naming --host/--port when it cannot), prints "qkv serve:
// listening on http://HOST:PORT" on stderr, serves until SIGTERM or SIGINT, then stops
// accepting, answers the requests being handled and drains the service's queue.
void serve_http(serve::Service& service, const HttpOptions& options);

}  // namespace qkv::tool
