#include "cost_curve.h"

#include "context.h"

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

namespace sw {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown-cpu";
}

// A sanitizer build runs several times slower; its curve must not serve a release build.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kBuildFlavor = "-asan";
#else
constexpr const char* kBuildFlavor = "";
#endif

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int CostCurve::padded_size(int n, double margin) const {
  if (n < 1 || n > max_tokens()) return n;
  int best = n;
  for (int m = n + 1; m <= max_tokens(); ++m) {
    if (cost(m) < cost(best)) best = m;
  }
  return cost(best) < cost(n) * (1 - margin) ? best : n;
}

int CostCurve::free_size(int n, double margin) const {
  int padded = padded_size(n, margin);
  if (padded < 1 || padded > max_tokens()) return n;
  int most = padded;
  for (int m = padded + 1; m <= max_tokens(); ++m) {
    if (cost(m) <= cost(padded)) most = m;
  }
  return most;
}

Json CostCurve::to_json() const { return {{"pass_ms_by_tokens", ms}}; }

CostCurve measure_cost_curve(Context& context, const Model::Impl& model, int max_tokens, int rounds,
                             int context_tokens) {
  using Clock = std::chrono::steady_clock;
  const llama_seq_id seq = Context::kScratch;
  // Ordinary text tokens, so no special-token path is timed.
  std::vector<llama_token> text = model.tokenize(std::string(size_t(context_tokens + max_tokens), 'a') + " b", false);
  auto token = [&](int i) { return text[size_t(i) % text.size()]; };
  PassCounter unused;
  context.drop(seq);
  std::vector<BatchToken> prefix;
  for (int i = 0; i < context_tokens; ++i) prefix.push_back({token(i), i, {seq}, i + 1 == context_tokens});
  context.decode(prefix, unused);
  std::vector<std::vector<double>> samples(static_cast<size_t>(max_tokens));
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    for (int n = 1; n <= max_tokens; ++n) {
      std::vector<BatchToken> batch;
      for (int i = 0; i < n; ++i) batch.push_back({token(i), llama_pos(context_tokens + i), {seq}, true});
      auto start = Clock::now();
      context.decode(batch, unused);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      context.drop(seq, context_tokens);
      if (round > 0) samples[size_t(n - 1)].push_back(ms);
    }
  }
  context.drop(seq);
  CostCurve curve;
  for (const auto& s : samples) curve.ms.push_back(median(s));
  return curve;
}

Speed measure_prefill_and_decode(Context& context, const Model::Impl& model, int prompt_tokens, int decode_tokens,
                                 int rounds) {
  using Clock = std::chrono::steady_clock;
  std::vector<llama_token> text = model.tokenize(std::string(size_t(prompt_tokens + decode_tokens), 'a') + " b", false);
  std::vector<llama_token> prompt, next;
  for (int i = 0; i < prompt_tokens; ++i) prompt.push_back(text[size_t(i) % text.size()]);
  for (int i = 0; i < decode_tokens; ++i) next.push_back(text[size_t(prompt_tokens + i) % text.size()]);
  std::vector<double> prefill, decode;
  PassCounter unused;
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    context.clear();
    auto start = Clock::now();
    context.append(prompt, unused);
    auto read = Clock::now();
    for (llama_token token : next) context.append({token}, unused);
    auto done = Clock::now();
    if (round == 0) continue;
    prefill.push_back(std::chrono::duration<double, std::milli>(read - start).count());
    decode.push_back(std::chrono::duration<double, std::milli>(done - read).count() / decode_tokens);
  }
  context.clear();
  return {prompt_tokens, decode_tokens, median(prefill), median(decode)};
}

std::string cost_curve_path(const Model::Impl& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto size = fs::file_size(model.params.path, ec);
  std::string key = fs::path(model.params.path).filename().string() + "|" + std::to_string(size) + "|" +
                    cpu_model() + "|" + std::to_string(model.threads);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(key));
  return (fs::path(cache_directory("costs")) / (fs::path(model.params.path).stem().string() + "-t" +
                            std::to_string(model.threads) + kBuildFlavor + "-" + hash + ".json"))
      .string();
}

CostCurve cached_cost_curve(Context& context, const Model::Impl& model) {
  std::string path = cost_curve_path(model);
  std::ifstream in(path);
  if (in) {
    try {
      Json saved = Json::parse(in);
      CostCurve curve{saved.at("pass_ms_by_tokens").get<std::vector<double>>()};
      if (!curve.ms.empty()) return curve;
    } catch (const std::exception&) {
      // A damaged cache file is measured again and replaced.
    }
  }
  CostCurve curve = measure_cost_curve(context, model);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Written aside and renamed, so that a reader (another session, another process) never sees
  // half a file.
  std::string partial = path + ".partial-" + std::to_string(::getpid()) + "-" +
                        std::to_string(reinterpret_cast<uintptr_t>(&context));
  {
    std::ofstream out(partial);
    if (out) out << curve.to_json().dump(1) << "\n";
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) std::filesystem::remove(partial, ec);
  return curve;
}

}  // namespace sw
