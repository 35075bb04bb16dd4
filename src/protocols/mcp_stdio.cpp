// MCP over stdio: the server a child process, one JSON-RPC message per line each way.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "protocols/mcp_messages.h"
#include "protocols/mcp_transport.h"

extern char** environ;

namespace sw::mcp {
namespace {

// Writes all of `data`; a reader that went away is an Error, not a SIGPIPE that ends the
// process (the signal is blocked on this thread while writing, and a pending one consumed).
void write_all(int fd, const std::string& data) {
  sigset_t pipe_signal, previous;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  size_t done = 0;
  int error = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    done += size_t(n);
  }
  if (error == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_signal, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error) throw Error(std::string("cannot write to it (it exited?): ") + std::strerror(error));
}

class StdioTransport : public Transport {
 public:
  StdioTransport(std::vector<std::string> command, std::chrono::milliseconds timeout)
      : command_(std::move(command)), timeout_(timeout) {
    if (command_.empty()) throw Error("an MCP server needs a command");
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
    if (pipe2(out, O_CLOEXEC) != 0) {
      close_pair(in);
      throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<char*> argv;
    for (std::string& part : command_) argv.push_back(part.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_server_ = in[1];
    from_server_ = out[0];
    if (rc != 0) {
      stop();
      throw Error(std::string("cannot start it: ") + std::strerror(rc));
    }
    pid_ = pid;
  }
  ~StdioTransport() override { stop(); }

  void exchange(const Json& request, const Headers&, const std::function<bool(const Json&)>& on_message,
                Deadline deadline) override {
    send(request);
    while (!on_message(read_message(deadline))) {
    }
  }
  void send(const Json& message) override { write_all(to_server_, message.dump() + "\n"); }
  void speak(const std::string&, bool) override {}  // a process is its own session

 private:
  static void close_pair(int fds[2]) {
    ::close(fds[0]);
    ::close(fds[1]);
  }

  Json read_message(Deadline deadline) {
    while (true) {
      size_t end = buffer_.find('\n');
      if (end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        return parse_line(line);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw Error("it did not answer within " + std::to_string(timeout_.count()) + " ms");
      pollfd p{from_server_, POLLIN, 0};
      int ready = poll(&p, 1, int(left.count()));
      if (ready <= 0) continue;  // interrupted, or the deadline: looked at above
      char chunk[65536];
      ssize_t n = ::read(from_server_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("it closed its output (it exited)");
      buffer_.append(chunk, size_t(n));
    }
  }

  // Closes the pipes (end of input: the server's cue to exit) and reaps the process, killed
  // after two seconds' grace.
  void stop() {
    if (to_server_ >= 0) ::close(to_server_);
    if (from_server_ >= 0) ::close(from_server_);
    to_server_ = from_server_ = -1;
    if (pid_ <= 0) return;
    for (int i = 0; i < 40; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      usleep(50000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::vector<std::string> command_;
  std::chrono::milliseconds timeout_;
  int pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
  std::string buffer_;  // bytes read but not yet a whole line
};

}  // namespace

std::unique_ptr<Transport> stdio_transport(const std::vector<std::string>& command, std::chrono::milliseconds timeout) {
  return std::make_unique<StdioTransport>(command, timeout);
}

}  // namespace sw::mcp
