// `serve`: an OpenAI-compatible HTTP server on the engine (see schemaweaver/openai.h).
//
// Requests are served by a pool of sessions ("slots"), each with its own KV cache; a request
// waits for a free slot, preferring the one whose cache holds its prompt prefix (the same
// system message and tools), or is refused with 503 when too many wait. A whole response is
// sent once the generation is done, with a status that tells how it went (a call that is not
// valid is no success, a timeout is 504); a streamed one is written as calls become
// executable. A client that goes away is noticed (on its socket, or at the stream's next
// write) and its generation cancelled at the next forward pass.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <httplib.h>

#include "common.h"
#include "schemaweaver/openai.h"

namespace cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace openai = sw::openai;

// The one thread that runs a slot's generations. llama.cpp's CPU backend keeps a team of OpenMP
// worker threads per thread that computes graphs, and the teams of the request threads that had
// computed before spin beside the one at work: on a 2-core machine each request served by
// another of httplib's threads made decoding slower (64 tokens of Qwen2.5-Coder-0.5B: 1.4 s on
// the first request, 1.8 to 2.3 s on the next ones; on one thread all take the first's time).
class SlotThread {
 public:
  SlotThread() : thread_([this] { serve(); }) {}
  ~SlotThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  // Runs `job` on the slot's thread and returns once it has run, throwing what it threw. One
  // job at a time: the slot's lease is held by one request.
  void run(const std::function<void()>& job) {
    std::packaged_task<void()> task(job);
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &task;
    }
    wake_.notify_one();
    done.get();
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return job_ != nullptr || stopping_; });
      if (!job_) return;
      std::packaged_task<void()>* job = job_;
      job_ = nullptr;
      lock.unlock();
      (*job)();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::packaged_task<void()>* job_ = nullptr;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is ready
};

// Sessions that serve one request at a time each, each on its own thread.
class SlotPool {
 public:
  SlotPool(const std::shared_ptr<const sw::Model>& model, int slots, int max_waiting,
           const PromptCacheOptions& prompt_cache, const PassCostOptions& pass_costs)
      : max_waiting_(max_waiting) {
    for (int i = 0; i < slots; ++i) {
      sessions_.push_back(std::make_unique<sw::Session>(model));
      threads_.push_back(std::make_unique<SlotThread>());
      prompt_cache.apply(*sessions_.back());
      pass_costs.apply(*sessions_.back());
      busy_.push_back(false);
      prefix_.push_back("");
    }
  }

  // A session held for one request; returned to the pool when destroyed.
  class Lease {
   public:
    Lease(SlotPool& pool, size_t index) : pool_(pool), index_(index) {}
    ~Lease() { pool_.release(index_); }
    sw::Session& session() { return *pool_.sessions_[index_]; }
    // Runs `job` (the session's generation) on the slot's thread (SlotThread).
    void run(const std::function<void()>& job) { pool_.threads_[index_]->run(job); }
    bool reused_prefix = false;  // the slot last served the same prompt prefix

   private:
    SlotPool& pool_;
    size_t index_;
  };

  // A free session, preferring one that served `prefix` last. Null when too many requests
  // wait already or none frees up before `deadline`.
  std::unique_ptr<Lease> acquire(const std::string& prefix, Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (waiting_ >= max_waiting_ && !any_free()) return nullptr;
    ++waiting_;
    bool freed = freed_.wait_until(lock, deadline, [&] { return any_free(); });
    --waiting_;
    if (!freed) return nullptr;
    size_t chosen = sessions_.size();
    for (size_t i = 0; i < sessions_.size(); ++i) {
      if (busy_[i]) continue;
      if (chosen == sessions_.size() || prefix_[i] == prefix) chosen = i;
      if (prefix_[i] == prefix) break;
    }
    busy_[chosen] = true;
    auto lease = std::make_unique<Lease>(*this, chosen);
    lease->reused_prefix = prefix_[chosen] == prefix;
    prefix_[chosen] = prefix;
    return lease;
  }

 private:
  bool any_free() const {
    for (bool b : busy_) {
      if (!b) return true;
    }
    return false;
  }

  void release(size_t index) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_[index] = false;
    }
    freed_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<sw::Session>> sessions_;
  std::vector<std::unique_ptr<SlotThread>> threads_;
  std::vector<bool> busy_;
  std::vector<std::string> prefix_;  // system message and tools of the slot's last request
  int waiting_ = 0;
  const int max_waiting_;
};

// Counters for GET /metrics (Prometheus text format).
// One line per request on stderr, written when its response is: when, what, its status and,
// for a generation, the mode, the prompt's tokens and how many were reused, the answer's passes,
// the ms to the call and in all. The request's handler and the logger run on one worker thread
// (httplib's), so what the handler learns is kept per thread until the logger writes it.
class AccessLog {
 public:
  explicit AccessLog(bool json) : json_(json) {}
  struct Record {
    Clock::time_point started = Clock::now();
    std::string mode;
    std::optional<sw::CallStats> stats;  // of the generation, if one ran
  };
  static Record& current() {
    thread_local Record record;
    return record;
  }
  static void begin() { current() = Record{}; }
  static void generated(const std::string& mode, const sw::CallStats& stats) {
    current().mode = mode;
    current().stats = stats;
  }

  void write(const httplib::Request& req, int status) const {
    Record& r = current();
    const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - r.started).count();
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::vector<std::pair<std::string, sw::Json>> fields;
    if (r.stats) {
      fields = {{"mode", r.mode},
                {"prompt_tokens", r.stats->prompt_tokens},
                {"reused_tokens", r.stats->prompt_reused_tokens},
                {"passes", r.stats->call_passes},
                {"call_ms", std::round(r.stats->executable_ms * 10) / 10}};
    }
    fields.emplace_back("total_ms", std::round(total_ms * 10) / 10);
    std::string text;
    if (json_) {
      sw::Json line = {{"time", when}, {"status", status}, {"method", req.method}, {"path", req.path}};
      for (const auto& [key, value] : fields) line[key] = value;
      text = line.dump();
    } else {
      text = std::string(when) + " " + std::to_string(status) + " " + req.method + " " + req.path;
      for (const auto& [key, value] : fields)
        text += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    r.stats.reset();  // a request that never reaches the routing must not show this one's
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(stderr, "%s\n", text.c_str());
  }

 private:
  const bool json_;
  mutable std::mutex mutex_;
};

class Metrics {
 public:
  void count_status(int status) {
    std::lock_guard<std::mutex> lock(mutex_);
    by_status_[status]++;
  }

  void record(const sw::CallResult& r, bool reused_prefix) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sw::CallStats& s = r.stats;
    calls_++;
    prompt_tokens_ += s.prompt_tokens;
    reused_tokens_ += s.prompt_reused_tokens;
    prefix_hits_ += reused_prefix;
    restored_tokens_ += s.prompt_restored_tokens;
    prompt_cache_hits_ += s.prompt_restored_tokens > 0;
    prompt_cache_stores_ += s.prompt_cache_stored_tokens > 0;
    passes_ += s.call_passes;
    sampled_ += s.sampled_tokens;
    compile_ms_ += s.compile_ms;
    prompt_ms_ += s.prompt_ms;
    executable_ms_ += s.executable_ms;
    for (const sw::PhaseStats& p : s.phases) {
      Phase& phase = phases_[p.name];
      phase.ms += p.ms;
      phase.passes += p.passes;
      phase.count++;
    }
  }

  void count_cancelled() {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_++;
  }

  std::string text(const sw::ToolSetCache::Counts& tool_sets) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    auto line = [&](const std::string& name, double value) { out += name + " " + std::to_string(value) + "\n"; };
    for (const auto& [status, n] : by_status_)
      line("schemaweaver_http_responses_total{status=\"" + std::to_string(status) + "\"}", double(n));
    line("schemaweaver_calls_total", double(calls_));
    line("schemaweaver_calls_cancelled_total", double(cancelled_));
    line("schemaweaver_prompt_tokens_total", double(prompt_tokens_));
    line("schemaweaver_prompt_reused_tokens_total", double(reused_tokens_));
    line("schemaweaver_prompt_prefix_slot_hits_total", double(prefix_hits_));
    // Tool-set prefixes read from the prompt cache on disk, and saved to it.
    line("schemaweaver_prompt_cache_hits_total", double(prompt_cache_hits_));
    line("schemaweaver_prompt_cache_restored_tokens_total", double(restored_tokens_));
    line("schemaweaver_prompt_cache_stores_total", double(prompt_cache_stores_));
    line("schemaweaver_prompt_ms_total", prompt_ms_);
    line("schemaweaver_tool_call_latency_ms_total", executable_ms_);
    line("schemaweaver_passes_total", double(passes_));
    line("schemaweaver_sampled_tokens_total", double(sampled_));
    // Compiled tool sets kept between requests: a hit compiles nothing (compile_ms counts the
    // misses and the pieces a kept set had not met yet).
    line("schemaweaver_tool_set_hits_total", double(tool_sets.hits));
    line("schemaweaver_tool_set_misses_total", double(tool_sets.misses));
    line("schemaweaver_tool_sets_kept", double(tool_sets.size));
    line("schemaweaver_compile_ms_total", compile_ms_);
    for (const auto& [name, p] : phases_) {
      line("schemaweaver_phase_ms_total{phase=\"" + name + "\"}", p.ms);
      line("schemaweaver_phase_passes_total{phase=\"" + name + "\"}", double(p.passes));
      line("schemaweaver_phase_count{phase=\"" + name + "\"}", double(p.count));
    }
    return out;
  }

 private:
  struct Phase {
    double ms = 0;
    long passes = 0, count = 0;
  };
  std::mutex mutex_;
  std::map<int, long> by_status_;
  std::map<std::string, Phase> phases_;
  long calls_ = 0, cancelled_ = 0, prompt_tokens_ = 0, reused_tokens_ = 0, prefix_hits_ = 0, passes_ = 0,
       sampled_ = 0, restored_tokens_ = 0, prompt_cache_hits_ = 0, prompt_cache_stores_ = 0;
  double prompt_ms_ = 0, executable_ms_ = 0, compile_ms_ = 0;
};

// The socket of a request's connection, found by its two addresses, to notice a client that
// goes away while its whole (not streamed) response is generated: httplib gives a handler no
// socket, and nothing may be written before the response's status is known.
class ConnectionWatch {
 public:
  explicit ConnectionWatch(const httplib::Request& req) : fd_(find(req)) {}

  // The peer closed its side (or the connection broke).
  bool closed() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  }

 private:
  static std::string numeric_host(const sockaddr_storage& a) {
    char text[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
    if (a.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
    return text;
  }
  static int port(const sockaddr_storage& a) {
    if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    return -1;
  }
  // The process's socket whose peer and local port are the request's; -1 if none is.
  static int find(const httplib::Request& req) {
    DIR* fds = opendir("/proc/self/fd");
    if (!fds) return -1;
    int found = -1;
    while (dirent* entry = readdir(fds)) {
      const int fd = std::atoi(entry->d_name);
      sockaddr_storage peer{}, local{};
      socklen_t peer_size = sizeof peer, local_size = sizeof local;
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || fd == dirfd(fds)) continue;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) continue;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) continue;
      if (port(peer) == req.remote_port && port(local) == req.local_port && numeric_host(peer) == req.remote_addr) {
        found = fd;
        break;
      }
    }
    closedir(fds);
    return found;
  }

  int fd_;
};

// Whether `given` is `key`, in time that does not tell how much of it matched.
bool same_secret(const std::string& given, const std::string& key) {
  unsigned char differ = given.size() != key.size();
  for (size_t i = 0; i < key.size(); ++i) differ |= (unsigned char)(key[i] ^ (i < given.size() ? given[i] : 0));
  return differ == 0;
}

bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The key of a prompt prefix a slot's cache can reuse: the system message and the tools.
std::string prefix_key(const openai::ChatRequest& r, const sw::ToolSet& tools) {
  return (r.messages.front().role == "system" ? r.messages.front().content : "") + "\n" + tools.key();
}

std::string sse(const sw::Json& value) {
  return "data: " + value.dump(-1, ' ', false, sw::Json::error_handler_t::replace) + "\n\n";
}

struct ServeCommand {
  ModelOptions model;
  PromptCacheOptions prompt_cache;
  PassCostOptions pass_costs;
  std::string host = "127.0.0.1";
  int port = 8080;
  int slots = 1;
  int max_waiting = 16;
  size_t max_body_bytes = 1 << 20;
  int timeout_s = 300;
  std::vector<std::string> read_only;
  int tool_set_cache = 32;
  std::string api_key;
  bool insecure_no_key = false;
  std::string log_format = "text";
  openai::Limits limits;
  RepeatedCallsOption repeated_calls;  // the default of requests under auto that leave x_repeated_calls out

  void run() {
    if (api_key.empty()) api_key = std::getenv("SCHEMAWEAVER_API_KEY") ? std::getenv("SCHEMAWEAVER_API_KEY") : "";
    if (api_key.empty() && !loopback(host) && !insecure_no_key)
      throw sw::Error("listening on " + host + " (not loopback) needs --api-key (or SCHEMAWEAVER_API_KEY); "
                      "--insecure-no-key serves without one");
    std::signal(SIGPIPE, SIG_IGN);  // a client that went away must not end the server
    auto loaded = sw::Model::load(model.params);
    std::string model_id = loaded->info().name.empty() ? model.params.path : loaded->info().name;
    SlotPool pool(loaded, slots, max_waiting, prompt_cache, pass_costs);
    sw::ToolSetCache tool_sets(loaded, size_t(tool_set_cache));
    Metrics metrics;
    std::atomic<long> next_id{1};
    long started = long(std::time(nullptr));
    const openai::RequestDefaults defaults{repeated_calls.choice == "answer"};

    httplib::Server server;
    server.set_payload_max_length(max_body_bytes);
    server.set_read_timeout(timeout_s, 0);
    server.set_write_timeout(timeout_s, 0);
    auto send_error = [&](httplib::Response& res, int status, const std::string& message, const std::string& type,
                          const std::string& param = "", const std::string& code = "") {
      res.status = status;
      res.set_content(openai::error_body(message, type, param, code).dump(), "application/json");
    };
    // The routes and the one method each takes: another method on a known path is a 405 that
    // names the right one, not a 404.
    static const std::map<std::string, std::string> route_methods = {
        {"/health", "GET"}, {"/v1/models", "GET"}, {"/metrics", "GET"}, {"/v1/chat/completions", "POST"}};
    server.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;  // a handler wrote its own error
      auto route = route_methods.find(req.path);
      if (res.status == 404 && route != route_methods.end() && route->second != req.method) {
        res.set_header("Allow", route->second);
        send_error(res, 405, req.path + " takes " + route->second + ", not " + req.method, "invalid_request_error");
        return;
      }
      const char* type = res.status == 413 ? "request_too_large" : res.status == 404 ? "not_found" : "invalid_request_error";
      send_error(res, res.status, "HTTP status " + std::to_string(res.status), type);
    });
    server.set_exception_handler([&](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      send_error(res, 500, "internal error", "server_error");
    });
    // A Content-Length that is not a byte count within the limit is refused before any body is
    // read: httplib would read (or skip) that many bytes first, holding the connection open.
    server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
      AccessLog::begin();
      // With a key, every route but /health needs "Authorization: Bearer <key>".
      if (!api_key.empty() && req.path != "/health") {
        const std::string auth = req.get_header_value("Authorization");
        const bool bearer = auth.rfind("Bearer ", 0) == 0;
        if (!bearer || !same_secret(auth.substr(7), api_key)) {
          res.set_header("WWW-Authenticate", "Bearer");
          send_error(res, 401, bearer ? "Incorrect API key provided." : "Missing API key: send 'Authorization: Bearer <key>'.",
                     "invalid_request_error", "", "invalid_api_key");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      if (!req.has_header("Content-Length")) return httplib::Server::HandlerResponse::Unhandled;
      const std::string length = req.get_header_value("Content-Length");
      const bool digits =
          !length.empty() && std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && length.size() <= 18 && std::stoull(length) <= max_body_bytes)
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("Connection", "close");
      if (digits) send_error(res, 413, "the body of " + length + " bytes exceeds the limit of " +
                                           std::to_string(max_body_bytes), "request_too_large");
      else send_error(res, 400, "Content-Length '" + length + "' is not a byte count", "invalid_request_error");
      return httplib::Server::HandlerResponse::Handled;
    });
    AccessLog access_log(log_format == "json");
    server.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
      metrics.count_status(res.status);
      access_log.write(req, res.status);
    });

    server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status": "ok"})", "application/json");
    });
    server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
      sw::Json list = {{"object", "list"},
                       {"data", sw::Json::array({{{"id", model_id}, {"object", "model"}, {"created", started},
                                                  {"owned_by", "schemaweaver"}}})}};
      res.set_content(list.dump(), "application/json");
    });
    server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.text(tool_sets.counts()), "text/plain; version=0.0.4");
    });
    server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      openai::ChatRequest request;
      try {
        request = openai::parse_chat_request(req.body, limits, defaults);
      } catch (const openai::RequestError& e) {
        return send_error(res, 400, e.what(), "invalid_request_error", e.param(), e.code());
      }
      for (sw::ToolSpec& t : request.tools)
        t.read_only = t.read_only || std::find(read_only.begin(), read_only.end(), t.name) != read_only.end();
      auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
      std::shared_ptr<const sw::ToolSet> tool_set;
      try {
        // Under auto with tools, a schema is the answer where the model does not call.
        const bool answer_only = request.response_schema && request.options.tool_choice != sw::ToolChoice::Auto;
        tool_set = answer_only ? tool_sets.get_schema(*request.response_schema) : tool_sets.get(request.tools);
        if (request.response_schema && !answer_only)
          request.options.answer_schema = tool_sets.get_schema(*request.response_schema);
      } catch (const sw::Error& e) {
        return send_error(res, 400, e.what(), "invalid_request_error",
                          request.response_schema ? "response_format" : "tools");
      }
      std::shared_ptr<SlotPool::Lease> lease = pool.acquire(prefix_key(request, *tool_set), deadline);
      if (!lease) return send_error(res, 503, "the server is busy; try again later", "server_busy");
      try {
        lease->session().check(request.messages, *tool_set, request.options);
      } catch (const sw::Error& e) {
        return send_error(res, 400, e.what(), "invalid_request_error");
      }
      std::string id = "chatcmpl-" + std::to_string(next_id++) + "-" + std::to_string(std::time(nullptr));
      long created = long(std::time(nullptr));
      if (!request.stream) return respond_whole(request, *tool_set, *lease, id, created, deadline, model_id,
                                                ConnectionWatch(req), res, metrics);
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider("text/event-stream", [&, request, tool_set, lease, id, created, deadline](size_t, httplib::DataSink& sink) {
        // false (the client is gone) drops the connection instead of ending the response.
        return stream(request, *tool_set, *lease, id, created, deadline, model_id, sink, metrics);
      });
    });

    if (!server.bind_to_port(host, port)) throw sw::Error("cannot listen on " + host + ":" + std::to_string(port));
    std::fprintf(stderr, "serving %s on http://%s:%d (%d slot(s))\n", model_id.c_str(), host.c_str(), port, slots);
    server.listen_after_bind();
  }

  // The request's generation on its slot: the result, or the error response to send instead
  // (a timeout, an engine error, an answer that is not a valid call), or nothing when the client
  // went away (`client_gone`, polled before every pass, said so).
  struct Generated {
    sw::CallResult result;
    openai::ErrorResponse error;
    bool gone = false;
  };
  static Generated generate(openai::ChatRequest& request, const sw::ToolSet& tool_set, SlotPool::Lease& lease,
                            Clock::time_point deadline, const std::function<bool()>& client_gone, Metrics& metrics) {
    Generated out;
    request.options.cancelled = [&] { return Clock::now() > deadline || (out.gone = out.gone || client_gone()); };
    try {
      lease.run([&] { out.result = lease.session().call(request.messages, tool_set, request.options); });
    } catch (const sw::Cancelled&) {
      metrics.count_cancelled();
      if (!out.gone) out.error = openai::timed_out();
      return out;
    } catch (const sw::Error& e) {
      out.error = {500, openai::error_body(e.what(), "server_error")};
      return out;
    }
    metrics.record(out.result, lease.reused_prefix);
    AccessLog::generated(sw::to_string(request.options.mode), out.result.stats);
    if (out.result.schema_answer) openai::schema_answer_as_content(out.result);
    out.error = openai::failed_answer(out.result);
    return out;
  }

  // A whole response, its status telling how the request went. A client that closes its
  // connection meanwhile is noticed on its socket and its generation cancelled.
  static void respond_whole(openai::ChatRequest request, const sw::ToolSet& tool_set, SlotPool::Lease& lease,
                            const std::string& id, long created, Clock::time_point deadline,
                            const std::string& model_id, const ConnectionWatch& watch, httplib::Response& res,
                            Metrics& metrics) {
    Generated g = generate(request, tool_set, lease, deadline, [&] { return watch.closed(); }, metrics);
    if (g.gone) {
      res.status = 499;  // nobody reads it: the client closed the request
      return;
    }
    if (g.error.status) {
      res.status = g.error.status;
      res.set_content(g.error.body.dump(), "application/json");
      return;
    }
    res.set_content(openai::completion(id, model_id, created, g.result).dump(-1, ' ', false, sw::Json::error_handler_t::replace),
                    "application/json");
  }

  // A streamed response: the role, a reply's text (or an answer in a response schema) and each
  // call as they are decided, then the end - or an error event in place of the end. While the call runs, an SSE comment every quarter second
  // tells whether the client is still there. Returns false if it is not.
  static bool stream(openai::ChatRequest request, const sw::ToolSet& tool_set, SlotPool::Lease& lease,
                     const std::string& id, long created, Clock::time_point deadline, const std::string& model_id,
                     httplib::DataSink& sink, Metrics& metrics) {
    auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
    auto probe_at = Clock::now();
    auto gone = [&] {
      if (Clock::now() < probe_at) return false;
      probe_at = Clock::now() + std::chrono::milliseconds(250);
      return !sink.is_writable() || !write(": \n\n");
    };
    write(sse(openai::role_chunk(id, model_id, created)));
    // Calls as they are decided; an answer in a response schema is content instead (the engine
    // tells a schema's reply beside tools as content only).
    openai::CallChunks calls(id, model_id, created);
    auto write_chunk = [&](const sw::Json& chunk) { return chunk.is_null() || write(sse(chunk)); };
    if (!request.response_schema || request.options.answer_schema) {
      request.options.on_call = [&](const sw::CallEvent& e) { write_chunk(calls.event(e)); };
      request.options.on_call_delta = [&](const sw::CallDelta& d) { write_chunk(calls.delta(d)); };
    }
    request.options.on_reasoning = [&](const std::string& reasoning) {
      write(sse(openai::reasoning_chunk(id, model_id, created, reasoning)));
    };
    // Text streams as it is decided; what was not told so (a cut-off character) is sent at the end.
    size_t told = 0;
    request.options.on_text = [&](const std::string& piece) {
      write(sse(openai::text_chunk(id, model_id, created, piece)));
      told += piece.size();
    };
    Generated g = generate(request, tool_set, lease, deadline, gone, metrics);
    if (g.gone) return false;
    if (g.error.status) {
      write(sse(g.error.body));
    } else {
      if (g.result.calls.empty() && g.result.text.size() > told)
        write(sse(openai::text_chunk(id, model_id, created, g.result.text.substr(told))));
      write(sse(openai::final_chunk(id, model_id, created, g.result)));
      write("data: [DONE]\n\n");
    }
    sink.done();
    return true;
  }
};

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (POST /v1/chat/completions, GET /v1/models, /health, /metrics)");
  auto c = std::make_shared<ServeCommand>();
  c->model.add_to(*cmd);
  c->prompt_cache.add_to(*cmd);
  c->pass_costs.add_to(*cmd);
  cmd->add_option("--host", c->host, "address to listen on (loopback by default)")->capture_default_str();
  cmd->add_option("--port", c->port, "port")->capture_default_str()->check(CLI::Range(1, 65535));
  cmd->add_option("--slots", c->slots, "requests generated at once, each with its own KV cache")
      ->capture_default_str()->check(CLI::Range(1, 16));
  cmd->add_option("--max-waiting", c->max_waiting, "requests that may wait for a slot; more get 503")
      ->capture_default_str()->check(CLI::Range(0, 4096));
  cmd->add_option("--max-body", c->max_body_bytes, "largest request body in bytes (413 beyond)")
      ->capture_default_str()->check(CLI::Range(size_t(1), size_t(1) << 30));
  cmd->add_option("--log-format", c->log_format, "the access log on stderr, one line per request: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--timeout", c->timeout_s, "seconds a request may take, waiting included (504 beyond)")
      ->capture_default_str()->check(CLI::Range(1, 86400));
  cmd->add_option("--api-key", c->api_key,
                  "key clients must send as 'Authorization: Bearer KEY' (else SCHEMAWEAVER_API_KEY; "
                  "needed on a non-loopback --host)");
  cmd->add_flag("--insecure-no-key", c->insecure_no_key, "serve a non-loopback --host without an API key");
  cmd->add_option("--max-messages", c->limits.messages, "messages per request at most")
      ->capture_default_str()->check(CLI::Range(size_t(1), size_t(100000)));
  cmd->add_option("--max-tools", c->limits.tools, "tools per request at most")
      ->capture_default_str()->check(CLI::Range(size_t(1), size_t(10000)));
  cmd->add_option("--max-schema-depth", c->limits.schema_depth, "nesting of a tool schema at most")
      ->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--max-tokens-limit", c->limits.max_tokens, "largest max_tokens a request may ask for")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--read-only", c->read_only, "tools treated as read-only (provisional calls)")->delimiter(',');
  c->repeated_calls.add_to(*cmd);
  cmd->add_option("--tool-sets", c->tool_set_cache, "compiled tool sets kept between requests (least recently used go)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->callback([c] { c->run(); });
}

}  // namespace cli
