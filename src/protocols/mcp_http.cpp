// MCP over Streamable HTTP: each message a POST to the endpoint; a request's answer comes back
// as one JSON body or as an event stream (server-sent events) that may carry the server's own
// notifications and requests before it. cpp-httplib does the HTTP and TLS.
#include "protocols/mcp_transport.h"

#ifdef SW_MCP_HTTP
#include <httplib.h>
#endif

#include "protocols/mcp_messages.h"

namespace sw::mcp {

#ifdef SW_MCP_HTTP
namespace {

constexpr size_t kExcerpt = 300;  // bytes of a body quoted in an error

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// "Name: value" as a header; an Error for anything else (the name is a token, the value one line).
std::pair<std::string, std::string> header_of(const std::string& line) {
  const size_t colon = line.find(':');
  const std::string name = colon == std::string::npos ? "" : trim(line.substr(0, colon));
  const bool token = !name.empty() && name.find_first_of(" \t\r\n\"(),/:;<=>?@[\\]{}") == std::string::npos;
  if (!token || line.find_first_of("\r\n") != std::string::npos)
    throw Error("'" + line.substr(0, 100) + "' is not a header \"Name: value\"");
  return {name, trim(line.substr(colon + 1))};
}

// An event stream read as it arrives: each event's data lines joined, handed on at the blank line
// that ends it (comments, ids, event names and retry times aside).
class EventStream {
 public:
  explicit EventStream(std::function<bool(const std::string&)> on_event) : on_event_(std::move(on_event)) {}
  // Returns false once `on_event` took the event it waited for.
  bool feed(const char* data, size_t size) {
    buffer_.append(data, size);
    size_t end;
    while ((end = buffer_.find('\n')) != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        const bool done = !data_.empty() && on_event_(data_);
        data_.clear();
        if (done) return false;
      } else if (line.compare(0, 5, "data:") == 0) {
        std::string part = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
        data_ += (data_.empty() ? "" : "\n") + part;
      }
    }
    return true;
  }

 private:
  std::function<bool(const std::string&)> on_event_;
  std::string buffer_;  // bytes of a line not yet ended
  std::string data_;    // the event's data so far
};

class HttpTransport : public Transport {
 public:
  HttpTransport(const std::string& url, const std::vector<std::string>& headers, std::chrono::milliseconds timeout)
      : timeout_(timeout) {
    const size_t scheme_end = url.find("://");
    const size_t path_at = scheme_end == std::string::npos ? std::string::npos : url.find('/', scheme_end + 3);
    origin_ = url.substr(0, path_at);
    path_ = path_at == std::string::npos ? "/" : url.substr(path_at);
    if (origin_.size() <= scheme_end + 3) throw Error("'" + url + "' names no host");
    for (const std::string& line : headers) headers_.push_back(header_of(line));
    client_ = make_client();
    if (!client_->is_valid()) throw Error("cannot use '" + url + "' (an https:// URL needs TLS support)");
  }
  ~HttpTransport() override = default;

  void exchange(const Json& request, const Headers& headers, const std::function<bool(const Json&)>& on_message,
                Deadline deadline) override {
    bool answered = false, timed_out = false, streamed = false;
    int status = 0;
    std::string body;
    EventStream events([&](const std::string& data) { return answered = on_message(parse_line(data)); });
    httplib::Request req = post(request, headers);
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      streamed = res.get_header_value("Content-Type").rfind("text/event-stream", 0) == 0;
      const std::string session = res.get_header_value("Mcp-Session-Id");
      if (!session.empty() && !stateless_) session_id_ = session;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (std::chrono::steady_clock::now() > deadline) return !(timed_out = true);
      if (!streamed || status != 200) {
        body.append(data, size);
        return true;
      }
      return events.feed(data, size);
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool sent = client_->send(req, res, error);
    if (answered) return;
    if (timed_out || (!sent && std::chrono::steady_clock::now() >= deadline))
      throw Error("it did not answer within " + std::to_string(timeout_.count()) + " ms");
    if (!sent) throw Error("cannot reach it: " + httplib::to_string(error));
    if (streamed && status == 200) throw Error("it ended the event stream before answering");
    const Json message = Json::parse(body, nullptr, false);
    const bool rpc = message.is_object() && message.contains("jsonrpc");
    if (status == 200 && rpc && on_message(message)) return;
    if (status >= 400 && rpc && message.contains("error") && on_message(message)) return;
    if (status == 404 && !session_id_.empty()) throw SessionExpired("it no longer knows the session");
    if (status == 200) throw Error("its answer is not the JSON-RPC response: " + body.substr(0, kExcerpt));
    throw HttpStatusError(status, "it answered HTTP " + std::to_string(status) +
                                      (body.empty() ? "" : ": " + trim(body).substr(0, kExcerpt)));
  }

  void send(const Json& message) override {
    // A client of its own: this may run while an exchange reads its event stream.
    std::unique_ptr<httplib::Client> client = make_client();
    httplib::Request req = post(message, {});
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    if (!client->send(req, res, error)) throw Error("cannot reach it: " + httplib::to_string(error));
    if (res.status >= 300)
      throw HttpStatusError(res.status, "it answered HTTP " + std::to_string(res.status) + " to a message of ours: " +
                                            trim(res.body).substr(0, kExcerpt));
  }

  void speak(const std::string& revision, bool stateless) override {
    revision_ = revision;
    stateless_ = stateless;
    if (stateless || revision.empty()) session_id_.clear();
  }

  void close() override {
    if (session_id_.empty()) return;
    std::unique_ptr<httplib::Client> client = make_client();
    client->set_read_timeout(1, 0);
    httplib::Headers headers{{"Mcp-Session-Id", session_id_}};
    if (!revision_.empty()) headers.emplace("MCP-Protocol-Version", revision_);
    client->Delete(path_.c_str(), headers);  // a server may refuse (405): the session ends anyway
    session_id_.clear();
  }

 private:
  std::unique_ptr<httplib::Client> make_client() const {
    auto client = std::make_unique<httplib::Client>(origin_);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout_);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout_ - seconds);
    client->set_connection_timeout(seconds.count(), micros.count());
    client->set_read_timeout(seconds.count(), micros.count());
    client->set_write_timeout(seconds.count(), micros.count());
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);  // else a body written after its headers waits out a delayed ACK (40 ms)
    return client;
  }

  httplib::Request post(const Json& message, const Headers& extra) const {
    httplib::Request req;
    req.method = "POST";
    req.path = path_;
    req.body = message.dump();
    req.headers.emplace("Content-Type", "application/json");
    req.headers.emplace("Accept", "application/json, text/event-stream");
    if (!revision_.empty()) req.headers.emplace("MCP-Protocol-Version", revision_);
    if (!session_id_.empty()) req.headers.emplace("Mcp-Session-Id", session_id_);
    for (const auto& [name, value] : headers_) req.headers.emplace(name, value);
    for (const auto& [name, value] : extra) req.headers.emplace(name, value);
    return req;
  }

  std::chrono::milliseconds timeout_;
  std::string origin_;  // scheme, host and port
  std::string path_;
  Headers headers_;     // the user's, on every request
  std::unique_ptr<httplib::Client> client_;
  std::string revision_;
  bool stateless_ = false;
  std::string session_id_;
};

}  // namespace

std::unique_ptr<Transport> http_transport(const std::string& url, const std::vector<std::string>& headers,
                                          std::chrono::milliseconds timeout) {
  return std::make_unique<HttpTransport>(url, headers, timeout);
}

#else

std::unique_ptr<Transport> http_transport(const std::string& url, const std::vector<std::string>&,
                                          std::chrono::milliseconds) {
  throw Error("'" + url + "': this build of the library has no HTTP (it was built without cpp-httplib)");
}

#endif

}  // namespace sw::mcp
