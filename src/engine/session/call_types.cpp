// The call's public value types (engine.h): decoding modes by name, a mode's switches, the
// stats as JSON.
#include <algorithm>
#include <cmath>

#include "schemaweaver/engine.h"

namespace sw {

std::string to_string(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::Free: return "free";
    case DecodeMode::Constrained: return "constrained";
    case DecodeMode::JumpForward: return "jump-forward";
    case DecodeMode::Speculative: return "speculative";
    case DecodeMode::SchemaWeaver: return "schemaweaver";
  }
  return "?";
}

ToolChoice parse_tool_choice(const std::string& name) {
  if (name == "required") return ToolChoice::Required;
  if (name == "auto") return ToolChoice::Auto;
  if (name == "none") return ToolChoice::None;
  throw Error("tool_choice is '" + name + "'; known: required, auto, none");
}

DecodeMode parse_decode_mode(const std::string& name) {
  for (DecodeMode mode : {DecodeMode::Free, DecodeMode::Constrained, DecodeMode::JumpForward, DecodeMode::Speculative,
                          DecodeMode::SchemaWeaver}) {
    if (to_string(mode) == name) return mode;
  }
  throw Error("unknown decoding mode '" + name + "' (known: free, constrained, jump-forward, speculative, schemaweaver)");
}

std::vector<std::string> apply_mode(const std::string& text, CallOptions& options, const std::vector<std::string>& own) {
  struct Switch {
    std::string name;
    bool WeaverOptions::*option;
    bool value;  // what the switch sets the option to
  };
  static const std::vector<Switch> weaver_switches = {
      {"no-parallel", &WeaverOptions::parallel_values, false}, {"no-padding", &WeaverOptions::padding, false},
      {"no-provisional", &WeaverOptions::provisional, false},  {"drafts", &WeaverOptions::drafts, true},
      {"whole-turn", &WeaverOptions::whole_turn, true},        {"unverified", &WeaverOptions::verify, false},
      {"no-adopt", &WeaverOptions::adopt_first, false},        {"branches", &WeaverOptions::plan_by_cost, false}};
  size_t slash = text.find('/');
  options.mode = parse_decode_mode(text.substr(0, slash));
  std::vector<std::string> found;
  while (slash != std::string::npos) {
    size_t next = text.find('/', slash + 1);
    std::string name = text.substr(slash + 1, next == std::string::npos ? std::string::npos : next - slash - 1);
    slash = next;
    if (std::find(own.begin(), own.end(), name) != own.end()) {
      found.push_back(name);
      continue;
    }
    if (name == "auto") {  // OpenAI's tool_choice auto: the model may answer in text
      options.tool_choice = ToolChoice::Auto;
      continue;
    }
    if (name == "list") {
      options.calls_as_list = true;
      continue;
    }
    auto weaver = std::find_if(weaver_switches.begin(), weaver_switches.end(),
                               [&](const Switch& s) { return s.name == name; });
    if (weaver == weaver_switches.end()) {
      std::string known = "auto, list";
      for (const Switch& s : weaver_switches) known += ", " + s.name;
      for (const std::string& s : own) known += ", " + s;
      throw Error("'" + text + "': unknown switch '" + name + "' (known: " + known + ")");
    }
    if (options.mode != DecodeMode::SchemaWeaver)
      throw Error("'" + text + "': '" + name + "' is a switch of the schemaweaver mode");
    options.weaver.*(weaver->option) = weaver->value;
  }
  return found;
}

Json CallStats::to_json() const {
  // The closest decision of the answer: where greedy decoding could go another way on other
  // kernels or other pass shapes.
  Json closest = nullptr;
  for (const Decision& d : decisions) {
    if (std::isfinite(d.margin) && (closest.is_null() || d.margin < closest.get<double>())) closest = d.margin;
  }
  Json phase_list = Json::array();
  for (const PhaseStats& p : phases)
    phase_list.push_back({{"name", p.name}, {"passes", p.passes}, {"tokens", p.tokens}, {"ms", p.ms}});
  Json plan_list = Json::array();
  for (const PlanStats& p : plans)
    plan_list.push_back({{"tool", p.tool}, {"plan", p.branches ? "branches" : "serial"},
                         {"branches_ms", p.branches_ms}, {"serial_ms", p.serial_ms}});
  Json widths = Json::object();
  for (const auto& [tokens, count] : passes_by_tokens) widths[std::to_string(tokens)] = count;
  return {{"prompt_tokens", prompt_tokens}, {"prompt_reused_tokens", prompt_reused_tokens},
          {"prompt_restored_tokens", prompt_restored_tokens}, {"prompt_cache_stored_tokens", prompt_cache_stored_tokens},
          {"prompt_passes", prompt_passes}, {"prompt_ms", prompt_ms}, {"executable_ms", executable_ms},
          {"call_ms", call_ms}, {"call_passes", call_passes}, {"call_prefill_passes", call_prefill_passes},
          {"call_tokens", call_tokens}, {"sampled_tokens", sampled_tokens},
          {"constraint_ms", constraint_ms}, {"constraint_steps", constraint_steps}, {"compile_ms", compile_ms},
          {"draft_tokens", draft_tokens}, {"accepted_draft_tokens", accepted_draft_tokens},
          {"peak_rss_kb", peak_rss_kb}, {"phases", phase_list}, {"plans", plan_list},
          {"passes_by_tokens", widths}, {"extra_kept_rows", extra_kept_rows}, {"pass_ms", pass_ms}, {"smallest_margin", closest},
          {"repeated_calls", repeated_calls},
          {"verification",
           {{"checked_tokens", verification.checked_tokens}, {"repaired_calls", verification.repaired_calls},
            {"discarded_tokens", verification.discarded_tokens},
            {"unverified_calls", verification.unverified_calls}}}};
}

Json CallEvent::to_json() const {
  return {{"kind", kind == Kind::Provisional ? "provisional" : "final"}, {"index", index}, {"call", call.to_json()},
          {"at_ms", at_ms}, {"replaces_provisional", replaces_provisional}};
}

Json CallResult::to_json() const {
  Json call_list = Json::array();
  for (const ToolCall& call : calls) call_list.push_back(call.to_json());
  Json event_list = Json::array();
  for (const CallEvent& e : stats.events) event_list.push_back(e.to_json());
  // Where the answer's text was decided and by what margin (null: no rival): answers of two
  // modes may part at a near-tie, where other pass shapes round the logits another way.
  Json decision_list = Json::array();
  for (const Decision& d : stats.decisions)
    decision_list.push_back({d.offset, std::isfinite(d.margin) ? Json(d.margin) : Json(nullptr)});
  Json out = {{"calls", call_list}, {"text", text}, {"error", error}, {"text_reply", text_reply},
              {"schema_answer", schema_answer}, {"stopped_at_max_tokens", stopped_at_max_tokens},
              {"answered_instead_of_repeating", answered_instead_of_repeating}, {"thinking_text", thinking_text},
              {"reasoning", reasoning}, {"decisions", decision_list}, {"stats", stats.to_json()},
              {"events", event_list}};
  if (!logprobs.empty()) {
    Json weighed = Json::array();
    for (const TokenLogprob& t : logprobs) {
      Json top = Json::array();
      for (const auto& [token, logprob] : t.top) top.push_back({token, logprob});
      weighed.push_back({{"token", t.token}, {"logprob", t.logprob}, {"top", top}});
    }
    out["logprobs"] = weighed;
  }
  return out;
}

}  // namespace sw
