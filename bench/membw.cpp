// Memory bandwidth: a probe that measures it and a co-runner that takes some of it.
//
//   membw probe [--mb N] [--seconds S]     streams a buffer on this thread, prints GB/s as JSON
//   membw load --intensity F [--mb N]      copies between two buffers for the fraction F of
//                                          every 10 ms slot (F = 1: without pause), until killed
//
// The buffers are far larger than the CPU caches, so every byte crosses the memory bus. This
// machine's memory clock cannot be lowered; a co-runner on the other core that competes for
// the bus is how the benchmark suite emulates a slower one.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sums the buffer 8 bytes at a time (the compiler vectorises it); returns the sum so that the
// reads are not optimised away.
uint64_t read_all(const std::vector<uint64_t>& buffer) {
  uint64_t sum = 0;
  for (uint64_t v : buffer) sum += v;
  return sum;
}

int probe(size_t bytes, double seconds) {
  std::vector<uint64_t> buffer(bytes / 8, 1);
  volatile uint64_t sink = read_all(buffer);  // touch every page first
  size_t passes = 0;
  auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    sink = sink + read_all(buffer);
    ++passes;
  }
  double elapsed = seconds_since(start);
  std::printf("{\"read_gb_per_s\": %.3f, \"buffer_mb\": %zu, \"passes\": %zu}\n",
              double(bytes) * double(passes) / elapsed / 1e9, bytes >> 20, passes);
  return 0;
}

int load(size_t bytes, double intensity) {
  std::vector<char> a(bytes / 2, 1), b(bytes / 2, 2);
  const auto slot = std::chrono::milliseconds(10);
  const size_t chunk = 1 << 20;
  size_t offset = 0;
  while (true) {
    auto start = Clock::now();
    auto busy_until = start + std::chrono::duration_cast<Clock::duration>(slot * intensity);
    while (Clock::now() < busy_until) {
      std::memcpy(b.data() + offset, a.data() + offset, chunk);
      offset = (offset + chunk) % (a.size() - chunk);
    }
    if (intensity < 1) std::this_thread::sleep_until(start + slot);
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: membw probe [--mb N] [--seconds S] | membw load --intensity F [--mb N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) usage();
  std::string command = argv[1];
  size_t mb = 1024;
  double seconds = 2.0, intensity = -1;
  for (int i = 2; i < argc; i += 2) {
    std::string flag = argv[i];
    char* end = nullptr;
    double value = std::strtod(argv[i + 1], &end);
    if (*end != '\0' || value < 0) usage();
    if (flag == "--mb") mb = size_t(value);
    else if (flag == "--seconds") seconds = value;
    else if (flag == "--intensity") intensity = value;
    else usage();
  }
  if (mb < 64) usage();
  if (command == "probe") return probe(mb << 20, seconds);
  if (command == "load" && intensity > 0 && intensity <= 1) return load(mb << 20, intensity);
  usage();
}
