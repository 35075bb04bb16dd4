// `bfcl`: run decoding modes over a BFCL sample, interleaved case by case, and summarise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "bfcl/bfcl.h"
#include "common.h"
#include "progress_line.h"

namespace cli {
namespace {

// Geometric mean of positive values, accumulated.
struct GeoMean {
  double log_sum = 0;
  int count = 0;
  void add(double value) {
    log_sum += std::log(std::max(value, 1e-3));
    ++count;
  }
  double value() const { return count ? std::exp(log_sum / count) : 0; }
};

std::string argument_bucket(int count) { return count >= 4 ? "4+" : std::to_string(std::max(count, 1)); }

// Running totals of one mode over the cases, built from the per-case JSON lines (so that a
// resumed run summarises the lines of the earlier run too).
struct ModeSummary {
  std::string mode;
  int cases = 0, correct = 0, failed_to_run = 0, timed = 0;
  int with_calls = 0, schema_valid = 0;  // cases whose output parsed into calls; of those, fitting the schema
  GeoMean latency, answer, prompt;
  std::vector<double> latencies;  // per case, for the spread
  std::map<std::string, GeoMean> latency_by_arguments;  // "1", "2", "3", "4+"
  long passes = 0, prefill_passes = 0, tokens = 0, constraint_steps = 0;
  long draft_tokens = 0, accepted_draft_tokens = 0;
  double constraint_ms = 0;
  long peak_rss_kb = 0;

  double per_call(long total) const { return timed ? double(total) / timed : 0; }

  void add(const sw::Json& line) {
    cases++;
    if (line.value("not_run", false)) {
      failed_to_run++;
      return;
    }
    timed++;
    correct += line.value("valid", false);
    if (line.value("has_calls", false)) {
      with_calls++;
      schema_valid += line.value("schema_valid", false);
    }
    double ms = line.at("latency_ms").get<double>();
    latency.add(ms);
    latencies.push_back(ms);
    answer.add(line.at("answer_ms").get<double>());
    latency_by_arguments[argument_bucket(line.value("arguments", 1))].add(ms);
    const sw::Json& s = line.at("stats");
    prompt.add(s.at("prompt_ms").get<double>());
    passes += s.at("call_passes").get<long>();
    prefill_passes += s.at("call_prefill_passes").get<long>();
    tokens += s.at("call_tokens").get<long>();
    constraint_ms += s.at("constraint_ms").get<double>();
    constraint_steps += s.at("constraint_steps").get<long>();
    draft_tokens += s.value("draft_tokens", 0L);
    accepted_draft_tokens += s.value("accepted_draft_tokens", 0L);
    peak_rss_kb = std::max(peak_rss_kb, s.at("peak_rss_kb").get<long>());
  }

  // Minimum, median and maximum of the per-case latencies.
  std::vector<double> spread() const {
    if (latencies.empty()) return {0, 0, 0};
    std::vector<double> sorted = latencies;
    std::sort(sorted.begin(), sorted.end());
    return {sorted.front(), sorted[sorted.size() / 2], sorted.back()};
  }

  sw::Json to_json() const {
    sw::Json buckets = sw::Json::object();
    for (const auto& [bucket, g] : latency_by_arguments)
      buckets[bucket] = {{"cases", g.count}, {"latency_geomean_ms", g.value()}};
    std::vector<double> range = spread();
    return {{"mode", mode}, {"cases", cases}, {"correct", correct},
            {"accuracy", cases ? double(correct) / cases : 0.0}, {"not_run", failed_to_run},
            {"schema_valid", with_calls ? double(schema_valid) / with_calls : 1.0},
            {"latency_geomean_ms", latency.value()}, {"answer_geomean_ms", answer.value()},
            {"latency_min_ms", range[0]}, {"latency_median_ms", range[1]}, {"latency_max_ms", range[2]},
            {"prompt_geomean_ms", prompt.value()},
            {"passes_per_call", per_call(passes)}, {"prefill_passes_per_call", per_call(prefill_passes)},
            {"decode_passes_per_call", per_call(passes - prefill_passes)},
            {"tokens_per_pass", passes ? double(tokens) / double(passes) : 0.0},
            {"constraint_us_per_step", constraint_steps ? 1000.0 * constraint_ms / double(constraint_steps) : 0.0},
            {"draft_tokens", draft_tokens}, {"accepted_draft_tokens", accepted_draft_tokens},
            {"latency_by_arguments", buckets}, {"peak_rss_kb", peak_rss_kb}};
  }
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// Which BFCL cases a command runs: a data folder's categories or a file pair, sampled.
struct CaseSelection {
  std::string data_dir;
  std::string categories = "simple_python,multiple,parallel,parallel_multiple,live_simple,live_multiple";
  std::string questions, answers;
  size_t sample = 100;
  uint32_t seed = 1;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--data", data_dir, "BFCL data folder (bfcl_eval/data)");
    cmd.add_option("--categories", categories, "comma-separated categories")->capture_default_str();
    cmd.add_option("--questions", questions, "a BFCL question file (instead of --data)");
    cmd.add_option("--answers", answers, "its possible-answer file");
    cmd.add_option("--sample", sample, "cases, even over argument counts (0: all)")->capture_default_str();
    cmd.add_option("--seed", seed, "sampling seed")->capture_default_str();
  }

  std::vector<sw::bfcl::Case> load() const {
    std::vector<sw::bfcl::Case> cases;
    if (!questions.empty()) {
      if (answers.empty()) throw sw::Error("--questions needs --answers");
      cases = sw::bfcl::load_cases(questions, answers);
    } else {
      if (data_dir.empty()) throw sw::Error("give --data (bfcl_eval/data) or --questions and --answers");
      cases = sw::bfcl::load_standard_categories(data_dir, split_list(categories));
    }
    if (cases.empty()) throw sw::Error("no BFCL cases with possible answers were found");
    return sample ? sw::bfcl::sample_by_argument_count(cases, sample, seed) : cases;
  }
};

struct BfclCommand {
  ModelOptions model;
  PassCostOptions pass_costs;
  CaseSelection selection;
  std::string modes = "constrained,jump-forward,schemaweaver";
  int repeat = 1;
  int warmup = 1;
  int max_tokens = 256;
  bool resume = false;
  SamplingOptions sampling;
  std::string draft_model_path;
  std::string out_path, summary_path;

  // The options of one mode for one case: given-args takes the expected tool and argument
  // set when the case expects a single call (otherwise the mode runs without them).
  static sw::CallOptions options_for(const ModeSpec& spec, const sw::bfcl::Case& c, int max_tokens) {
    sw::CallOptions options = spec.options;
    options.max_tokens = max_tokens;
    std::vector<sw::bfcl::ExpectedCall> expected = sw::bfcl::expected_calls(c.ground_truth);
    if (spec.given_arguments && expected.size() == 1 && !expected[0].arguments.empty()) {
      options.tool = expected[0].tool;
      options.given_arguments = expected[0].arguments;
    }
    return options;
  }

  // Runs one case in one mode `repeat` times; the line records the geometric mean of the
  // times and each run's time.
  sw::Json run_case(sw::Session& session, const sw::bfcl::Case& c, const ModeSpec& spec,
                    const std::shared_ptr<const sw::Model>& draft) const {
    sw::Json line = {{"id", c.id}, {"category", c.category}, {"mode", spec.label},
                     {"arguments", c.argument_count}};
    std::vector<sw::ToolSpec> tools;
    try {
      tools = sw::parse_tools(c.functions);
    } catch (const sw::Error& e) {
      line["not_run"] = true;
      line["valid"] = false;
      line["error"] = std::string("tools not supported: ") + e.what();
      return line;
    }
    for (sw::ToolSpec& t : tools) t.read_only = t.read_only || spec.read_only_tools;
    sw::CallOptions options = options_for(spec, c, max_tokens);
    sampling.apply(options);
    if (spec.draft_model) options.draft_model = draft;
    sw::CallResult result;
    GeoMean latency, answer;
    sw::Json runs = sw::Json::array();
    for (int r = 0; r < repeat; ++r) {
      result = session.call(c.messages, tools, options);
      latency.add(result.stats.executable_ms);
      answer.add(result.stats.call_ms);
      runs.push_back(result.stats.executable_ms);
    }
    // Parsed calls are judged by BFCL's rules even when they break the schema (BFCL has its
    // own view of types); unparsable output is wrong with the parser's reason.
    sw::bfcl::Verdict verdict = result.calls.empty() ? sw::bfcl::Verdict{false, result.error}
                                                     : sw::bfcl::check(c, result.calls);
    line["valid"] = verdict.valid;
    if (!verdict.valid) line["error"] = verdict.error;
    line["has_calls"] = !result.calls.empty();
    sw::Json calls = sw::Json::array();
    for (const sw::ToolCall& call : result.calls) calls.push_back(call.to_json());
    line["calls"] = calls;
    line["text_reply"] = result.text_reply;
    line["schema_valid"] = result.error.empty();
    line["output"] = result.text;
    line["latency_ms"] = latency.value();
    line["latency_runs_ms"] = runs;
    line["answer_ms"] = answer.value();
    line["stats"] = result.stats.to_json();
    line["events"] = sw::Json::array();
    for (const sw::CallEvent& e : result.stats.events) line["events"].push_back(e.to_json());
    return line;
  }

  // With --resume: the lines an earlier run wrote for this run's cases and modes, keyed by
  // case id and mode. The file is rewritten with just its complete lines (a run stopped while
  // writing leaves half a line), and the run appends to it.
  std::map<std::pair<std::string, std::string>, sw::Json> finished_lines() const {
    std::map<std::pair<std::string, std::string>, sw::Json> done;
    std::ifstream in(out_path);
    if (!resume || !in) return done;
    std::vector<std::string> kept;
    for (std::string text; std::getline(in, text);) {
      sw::Json line = sw::Json::parse(text, nullptr, false);
      if (line.is_discarded() || !line.contains("id") || !line.contains("mode")) continue;
      done[{line["id"].get<std::string>(), line["mode"].get<std::string>()}] = line;
      kept.push_back(text);
    }
    in.close();
    std::ofstream rewrite(out_path, std::ios::trunc);
    for (const std::string& text : kept) rewrite << text << "\n";
    return done;
  }

  void run() const {
    std::vector<ModeSpec> decode_modes;
    for (const std::string& name : split_list(modes)) decode_modes.push_back(parse_mode_spec(name));
    if (decode_modes.empty()) throw sw::Error("--modes is empty");
    if (repeat < 1) throw sw::Error("--repeat must be at least 1");
    if (resume && out_path.empty()) throw sw::Error("--resume needs --out");
    std::vector<sw::bfcl::Case> cases = selection.load();
    auto loaded = sw::Model::load(model.params);
    auto draft = load_draft_model(draft_model_path, model.params, decode_modes);
    sw::Session session(loaded);
    pass_costs.apply(session);
    auto done = finished_lines();
    std::ofstream out_file;
    if (!out_path.empty()) {
      out_file.open(out_path, resume ? std::ios::app : std::ios::trunc);
      if (!out_file) throw sw::Error("cannot write '" + out_path + "'");
    }
    std::ostream& out = out_path.empty() ? std::cout : out_file;
    std::vector<ModeSummary> summaries;
    for (const ModeSpec& mode : decode_modes) {
      summaries.emplace_back();
      summaries.back().mode = mode.label;
    }
    std::vector<size_t> to_run;
    for (size_t i = 0; i < cases.size(); ++i) {
      bool all_done = true;
      for (const ModeSpec& mode : decode_modes) all_done = all_done && done.count({cases[i].id, mode.label});
      if (!all_done) to_run.push_back(i);
    }
    if (!done.empty())
      std::fprintf(stderr, "resuming: %zu of %zu cases already done\n", cases.size() - to_run.size(), cases.size());

    // Warm-up: the first calls pay for page faults and weight repacking.
    for (int w = 0; w < warmup && !to_run.empty(); ++w) {
      for (const ModeSpec& mode : decode_modes) run_case(session, cases[to_run.front()], mode, draft);
    }
    ProgressLine progress("cases");
    size_t ran = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      bool fresh = false;
      // Each case starts with the next mode in turn, so no mode is always the one that runs
      // right after the prompt's computation.
      for (size_t turn = 0; turn < decode_modes.size(); ++turn) {
        const size_t m = (i + turn) % decode_modes.size();
        auto it = done.find({cases[i].id, decode_modes[m].label});
        if (it != done.end()) {
          summaries[m].add(it->second);
          continue;
        }
        sw::Json line = run_case(session, cases[i], decode_modes[m], draft);
        summaries[m].add(line);
        out << line.dump(-1, ' ', false, sw::Json::error_handler_t::replace) << "\n" << std::flush;
        std::fprintf(stderr, "[%zu/%zu] %-28s %-24s %8.1f ms %s\n", i + 1, cases.size(), cases[i].id.c_str(),
                     summaries[m].mode.c_str(), line.value("latency_ms", 0.0),
                     line["valid"].get<bool>() ? "ok" : "wrong");
        fresh = true;
      }
      if (fresh) progress({"run", ++ran, to_run.size()});
    }
    print_table(summaries, loaded->info(), cases.size());
    if (!summary_path.empty()) write_summary(summaries, loaded->info(), cases.size());
  }

  void print_table(const std::vector<ModeSummary>& summaries, const sw::ModelInfo& info, size_t n) const {
    std::printf("\nmodel %s (%s), %zu cases, seed %u, %d repetition(s), %d thread(s)\n",
                info.name.c_str(), info.description.c_str(), n, selection.seed, repeat, info.threads);
    std::printf("| mode | correct | schema-valid | tool-call latency geomean (ms) | min / median / max (ms) | "
                "vs first | answer (ms) | passes/call (prefill + decode) | tokens/pass | constraint us/step | "
                "prompt (ms) | peak RSS (MiB) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const ModeSummary& s : summaries) {
      std::vector<double> range = s.spread();
      std::printf("| %s | %d/%d (%.1f %%) | %.1f %% | %.1f | %.0f / %.0f / %.0f | %.2fx | %.1f | %.1f (%.1f + %.1f) | "
                  "%.2f | %.1f | %.1f | %.1f |\n",
                  s.mode.c_str(), s.correct, s.cases, s.cases ? 100.0 * s.correct / s.cases : 0.0,
                  s.with_calls ? 100.0 * s.schema_valid / s.with_calls : 100.0, s.latency.value(),
                  range[0], range[1], range[2],
                  s.latency.value() > 0 ? summaries.front().latency.value() / s.latency.value() : 0.0,
                  s.answer.value(), s.per_call(s.passes), s.per_call(s.prefill_passes),
                  s.per_call(s.passes - s.prefill_passes), s.passes ? double(s.tokens) / double(s.passes) : 0.0,
                  s.constraint_steps ? 1000.0 * s.constraint_ms / double(s.constraint_steps) : 0.0,
                  s.prompt.value(), double(s.peak_rss_kb) / 1024.0);
    }
    for (const ModeSummary& s : summaries) {
      if (s.draft_tokens > 0)
        std::printf("\n%s: %ld of %ld draft tokens taken (%.1f %%)\n", s.mode.c_str(), s.accepted_draft_tokens,
                    s.draft_tokens, 100.0 * double(s.accepted_draft_tokens) / double(s.draft_tokens));
    }
    std::printf("\ntool-call latency geomean (ms) by required arguments\n| mode | 1 | 2 | 3 | 4+ |\n|---|---|---|---|---|\n");
    for (const ModeSummary& s : summaries) {
      std::printf("| %s |", s.mode.c_str());
      for (const char* bucket : {"1", "2", "3", "4+"}) {
        auto it = s.latency_by_arguments.find(bucket);
        if (it == s.latency_by_arguments.end()) std::printf(" - |");
        else std::printf(" %.1f (%d) |", it->second.value(), it->second.count);
      }
      std::printf("\n");
    }
  }

  void write_summary(const std::vector<ModeSummary>& summaries, const sw::ModelInfo& info, size_t n) const {
    sw::Json modes_json = sw::Json::array();
    for (const ModeSummary& s : summaries) modes_json.push_back(s.to_json());
    sw::Json summary = {{"model", info.path}, {"model_name", info.name}, {"cases", n}, {"seed", selection.seed},
                        {"repeat", repeat}, {"threads", info.threads}, {"llama", info.llama_version},
                        {"weight_bytes", info.weight_bytes}, {"model_description", info.description},
                        {"modes", modes_json}};
    write_json_file(summary_path, summary);
  }
};

// `bfcl-cases`: the sampled cases as OpenAI chat requests, for a server (this project's or
// another) to answer, and BFCL's check of the calls it answered with.
struct BfclCasesCommand {
  CaseSelection selection;
  std::string requests_path, calls_path;

  void run() const {
    if (requests_path.empty() == calls_path.empty()) throw sw::Error("give one of --requests and --check");
    const std::vector<sw::bfcl::Case> cases = selection.load();
    if (!requests_path.empty()) write_requests(cases);
    else check_calls(cases);
  }

  void write_requests(const std::vector<sw::bfcl::Case>& cases) const {
    std::ofstream out(requests_path, std::ios::trunc);
    for (const sw::bfcl::Case& c : cases) {
      sw::Json messages = sw::Json::array();
      for (const sw::Message& m : c.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
      sw::Json expected_tools = sw::Json::array();
      for (const sw::bfcl::ExpectedCall& call : sw::bfcl::expected_calls(c.ground_truth)) expected_tools.push_back(call.tool);
      sw::Json line = {{"id", c.id}, {"category", c.category}, {"arguments", c.argument_count},
                       {"expected_calls", expected_tools.size()}, {"expected_tools", expected_tools},
                       {"messages", messages}, {"tools", sw::bfcl::openai_tools(c.functions)}};
      out << line.dump(-1, ' ', false, sw::Json::error_handler_t::replace) << "\n";
    }
    if (!out) throw sw::Error("cannot write '" + requests_path + "'");
    std::fprintf(stderr, "%zu requests written to %s\n", cases.size(), requests_path.c_str());
  }

  // Reads {"id", "calls": [{"name", "arguments": object or JSON text}], "error"?} lines and
  // writes {"id", "valid", "error"} lines to stdout; a line without calls is wrong.
  void check_calls(const std::vector<sw::bfcl::Case>& cases) const {
    std::map<std::string, const sw::bfcl::Case*> by_id;
    for (const sw::bfcl::Case& c : cases) by_id[c.id] = &c;
    std::ifstream in(calls_path);
    if (!in) throw sw::Error("cannot read '" + calls_path + "'");
    int lines = 0, correct = 0, number = 0;
    for (std::string text; std::getline(in, text);) {
      ++number;
      if (text.empty()) continue;
      const std::string where = calls_path + ":" + std::to_string(number);
      sw::Json line = sw::Json::parse(text, nullptr, false);
      if (line.is_discarded() || !line.is_object() || !line.contains("id") || !line["id"].is_string())
        throw sw::Error(where + ": expected a JSON object with a string 'id'");
      auto found = by_id.find(line["id"].get<std::string>());
      if (found == by_id.end()) throw sw::Error(where + ": '" + line["id"].get<std::string>() + "' is not a sampled case");
      sw::bfcl::Verdict verdict = check_line(*found->second, line);
      ++lines;
      correct += verdict.valid;
      sw::Json out = {{"id", found->first}, {"valid", verdict.valid}};
      if (!verdict.valid) out["error"] = verdict.error;
      std::cout << out.dump(-1, ' ', false, sw::Json::error_handler_t::replace) << "\n";
    }
    std::fprintf(stderr, "%d of %d correct\n", correct, lines);
  }

  static sw::bfcl::Verdict check_line(const sw::bfcl::Case& c, const sw::Json& line) {
    const sw::Json calls = line.value("calls", sw::Json::array());
    if (!calls.is_array() || calls.empty())
      return {false, line.contains("error") ? line["error"].dump() : "no tool call"};
    std::vector<sw::ToolCall> parsed;
    for (const sw::Json& call : calls) {
      if (!call.is_object() || !call.contains("name") || !call["name"].is_string())
        return {false, "a call without a name"};
      sw::Json arguments = call.value("arguments", sw::Json::object());
      if (arguments.is_string()) arguments = sw::Json::parse(arguments.get<std::string>(), nullptr, false);
      if (!arguments.is_object()) return {false, "arguments that are not a JSON object"};
      parsed.push_back({call["name"].get<std::string>(), arguments});
    }
    return sw::bfcl::check(c, parsed);
  }
};

}  // namespace

void add_bfcl_cases_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bfcl-cases", "the BFCL sample as OpenAI requests, and the check of calls made elsewhere");
  auto c = std::make_shared<BfclCasesCommand>();
  c->selection.add_to(*cmd);
  cmd->add_option("--requests", c->requests_path,
                  "write each case as a JSON line: id, category, messages and tools (JSON Schema types)");
  cmd->add_option("--check", c->calls_path,
                  "check calls made elsewhere: JSON lines of id and calls [{name, arguments}]; verdicts to stdout");
  cmd->callback([c] { c->run(); });
}

void add_bfcl_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bfcl", "run decoding modes over a BFCL sample and check the calls");
  auto c = std::make_shared<BfclCommand>();
  c->model.add_to(*cmd);
  c->pass_costs.add_to(*cmd);
  c->selection.add_to(*cmd);
  cmd->add_option("--modes", c->modes, "comma-separated modes (mode[/switch...], see `call --mode`; /given-args takes the expected argument set), interleaved per case, each case starting with the next mode in turn")->capture_default_str();
  cmd->add_option("--repeat", c->repeat, "timed repetitions per case and mode")->capture_default_str();
  cmd->add_option("--warmup", c->warmup, "untimed warm-up runs of the first case")->capture_default_str();
  cmd->add_option("-n,--max-tokens", c->max_tokens, "generated tokens at most")->capture_default_str();
  cmd->add_option("--out", c->out_path, "write the per-case JSON lines here (default: stdout)");
  cmd->add_option("--summary-json", c->summary_path, "write the summary as JSON here");
  cmd->add_option("--draft-model", c->draft_model_path, "the draft model of speculative/draft-model");
  c->sampling.add_to(*cmd);
  cmd->add_flag("--resume", c->resume, "keep the lines --out already has for these cases and modes, run the rest");
  cmd->callback([c] { c->run(); });
}

}  // namespace cli
