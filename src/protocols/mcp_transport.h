// How MCP's JSON-RPC messages travel: a stdio server's lines, or Streamable HTTP's POSTs whose
// answers come as one JSON body or an event stream. McpServer speaks the protocol over either.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schemaweaver/mcp.h"

namespace sw::mcp {

using Headers = std::vector<std::pair<std::string, std::string>>;
using Deadline = std::chrono::steady_clock::time_point;

// An HTTP status that carried no JSON-RPC answer (the server's 4xx/5xx).
struct HttpStatusError : Error {
  HttpStatusError(int http_status, const std::string& what) : Error(what), status(http_status) {}
  int status;
};

// The server no longer knows the session it issued (HTTP 404 on a request that carried its id):
// the client starts a new one.
struct SessionExpired : Error {
  using Error::Error;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `request` (`headers` beside it where the transport has headers) and gives `on_message`
  // each message that arrives until it returns true: the answer, or a JSON-RPC error the server
  // sent with an HTTP error status. Throws Error if none comes by `deadline`.
  virtual void exchange(const Json& request, const Headers& headers, const std::function<bool(const Json&)>& on_message,
                        Deadline deadline) = 0;
  // Sends a notification, or the answer to a request of the server's.
  virtual void send(const Json& message) = 0;
  // The revision the requests speak from now on ("" before one is agreed); `stateless`: no
  // session (2026-07-28), a handshake's session id forgotten.
  virtual void speak(const std::string& revision, bool stateless) = 0;
  // Ends the session, if the transport has one.
  virtual void close() {}
};

std::unique_ptr<Transport> stdio_transport(const std::vector<std::string>& command, std::chrono::milliseconds timeout);
// Throws Error where the library was built without HTTP (cpp-httplib) or the URL is not one.
std::unique_ptr<Transport> http_transport(const std::string& url, const std::vector<std::string>& headers,
                                          std::chrono::milliseconds timeout);

}  // namespace sw::mcp
