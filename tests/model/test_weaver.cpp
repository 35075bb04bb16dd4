// SchemaWeaver on real models: the skeleton's token boundaries on every model's tokenizer, the
// write-back against a serial prefill, provisional calls, tool selection, and the mode end to
// end on the default model (SmolLM2-135M-Instruct Q4_1), greedy and deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "agreement.h"
#include "bfcl/bfcl.h"
#include "bfcl_case.h"
#include "schemaweaver/engine.h"
#include "testing.h"

namespace {

std::shared_ptr<sw::Model> model() {
  static std::shared_ptr<sw::Model> loaded = sw::Model::load({SW_TEST_MODEL});
  return loaded;
}

std::vector<sw::ToolSpec> tools_from(const std::string& path) {
  std::ifstream file(path);
  return sw::parse_tools(sw::Json::parse(file));
}

std::vector<sw::ToolSpec> weather_tools() { return tools_from(SW_EXAMPLES "/weather_tools.json"); }

// Every model the set-up fetched (the default one at least).
std::vector<std::string> all_models() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(SW_TEST_MODEL_DIR)) {
    if (entry.path().extension() == ".gguf") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// A tool whose arguments cover every value type, and values as models write them.
const char* kAllTypes = R"({"name": "book", "parameters": {"type": "object", "properties": {
  "city": {"type": "string"}, "count": {"type": "integer"}, "lat": {"type": "number"},
  "flag": {"type": "boolean"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
  "tags": {"type": "array", "items": {"type": "string"}}, "meta": {"type": "object"},
  "note": {"type": ["string", "null"]}},
  "required": ["city", "count", "lat", "flag", "unit", "tags", "meta", "note"]}})";

const std::vector<std::vector<std::string>> kValues = {
    {R"("Paris")", R"("San Francisco, CA")", R"("")", R"(" leading")", R"("東京")"},
    {"42", "-3", "0", "1000000"},
    {"-12.5", "3.14", "0.001", "7"},
    {"true", "false"},
    {R"("celsius")", R"("fahrenheit")"},
    {R"(["a", "b"])", "[]"},
    {R"({"k": 1})", "{}"},
    {"null", R"("x")"},
};

// Cutting the skeleton where the tokenizer has a stable boundary means: the model's own
// tokenization of a call equals the skeleton's tokens followed by the tokenization of the rest.
TEST(Skeleton, RoundTripsThroughEveryModelsTokenizer) {
  std::vector<std::string> models = all_models();
  ASSERT_FALSE(models.empty());
  auto tools = sw::parse_tools(sw::Json::parse(kAllTypes));
  std::vector<const sw::Property*> args;
  for (const sw::Property& p : tools[0].arguments) args.push_back(&p);
  for (const std::string& path : models) {
    sw::ModelParams params{path};
    params.vocab_only = true;
    auto vocabulary = sw::Model::load(params);
    const sw::LoadedModel& m = sw::loaded(*vocabulary);
    std::string head = m.format.opener + "{\"name\": \"book\", \"arguments\": {";
    sw::Skeleton skeleton = sw::build_skeleton(m, head, args, m.format);
    ASSERT_EQ(skeleton.branches.size(), args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const sw::SkeletonBranch& branch = skeleton.branches[i];
      EXPECT_FALSE(branch.tokens.empty());
      // The skeleton's texts add up to the call's text.
      EXPECT_EQ(m.detokenize(skeleton.head) + m.detokenize(branch.tokens) + branch.value_prefix,
                head + branch.key_text);
      for (const std::string& value : kValues[i]) {
        std::vector<llama_token> whole = m.tokenize(head + branch.key_text + value + "}", false);
        std::vector<llama_token> pieced = skeleton.head;
        pieced.insert(pieced.end(), branch.tokens.begin(), branch.tokens.end());
        std::vector<llama_token> rest = m.tokenize(branch.value_prefix + value + "}", false);
        pieced.insert(pieced.end(), rest.begin(), rest.end());
        EXPECT_EQ(whole, pieced) << path << ": " << branch.key_text << value;
      }
    }
  }
}

sw::CallResult call(const std::vector<sw::ToolSpec>& tools, const std::string& request, sw::CallOptions options) {
  return fresh_call(model(), {{"user", request}}, tools, options);
}

// The branches always: these tests check their mechanics (the plan that chooses between them
// and serial values has tests of its own below).
sw::CallOptions weaving(int max_tokens = 96) {
  sw::CallOptions options;
  options.max_tokens = max_tokens;
  options.weaver.plan_by_cost = false;
  return options;
}

TEST(Weaver, WeatherCallWithPhases) {
  sw::CallResult r = call(weather_tools(), "What is the weather like in Paris?", weaving());
  ASSERT_TRUE(r.error.empty()) << r.error << "\n" << r.text;
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments["city"], "Paris");
  std::vector<std::string> phases;
  for (const sw::PhaseStats& p : r.stats.phases) phases.push_back(p.name);
  EXPECT_EQ(phases, (std::vector<std::string>{"name", "skeleton", "values", "write-back", "verify", "optional"}));
  // One required argument: its branch saw what the conversation holds, so the write-back takes
  // its cells and its logits without a pass, and verification needs none either.
  for (const sw::PhaseStats& p : r.stats.phases) {
    if (p.name == "skeleton") EXPECT_EQ(p.passes, 1) << p.name;
    if (p.name == "write-back" || p.name == "verify") EXPECT_EQ(p.passes, 0) << p.name;
  }
  EXPECT_EQ(r.stats.verification.checked_tokens, 1);  // how the value ends
  EXPECT_EQ(r.stats.verification.repaired_calls, 0);
  ASSERT_EQ(r.stats.events.size(), 1u);  // get_weather is not read-only: its final call only
  EXPECT_EQ(r.stats.events[0].kind, sw::CallEvent::Kind::Final);
  EXPECT_EQ(r.stats.events[0].call, r.calls[0]);
  EXPECT_LE(r.stats.executable_ms, r.stats.call_ms);
}

// Three required numbers: all three decoded in the same passes.
TEST(Weaver, ParallelValuesTakeFewerPassesThanConstrainedDecoding) {
  sw::bfcl::Case c = bfcl_case("simple_python_27");
  const sw::bfcl::Case* found = &c;
  auto tools = sw::parse_tools(found->functions);
  sw::CallOptions constrained = weaving();
  constrained.mode = sw::DecodeMode::Constrained;
  // Fresh sessions: a prompt reused from the cache has other rounding than one computed whole.
  sw::CallResult serial = fresh_call(model(), found->messages, tools, constrained);
  sw::CallResult woven = fresh_call(model(), found->messages, tools, weaving());
  EXPECT_TRUE(sw::bfcl::check(*found, woven.calls).valid) << woven.text;
  EXPECT_TRUE(agree_where_decided(serial, woven));
  EXPECT_LT(woven.stats.call_passes * 4, serial.stats.call_passes);
  for (const sw::PhaseStats& p : woven.stats.phases) {
    if (p.name == "values") EXPECT_LE(p.passes, 4);  // the longest value, not the sum
  }
}

// Values copied from the request are guessed by prompt lookup and checked in the same passes:
// the same answer in fewer passes.
TEST(Weaver, DraftsChangeThePassesNotTheAnswer) {
  int fewer = 0;
  for (const char* id : {"simple_python_97", "multiple_50", "parallel_8", "simple_python_27"}) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    sw::CallOptions options = weaving(128);
    // Fresh sessions: a prompt reused from the cache has other rounding than one computed whole.
    sw::CallResult plain = fresh_call(model(), c.messages, tools, options);
    options.weaver.drafts = true;
    sw::CallResult drafted = fresh_call(model(), c.messages, tools, options);
    EXPECT_TRUE(agree_where_decided(plain, drafted)) << id;
    // Without drafts, only a repair drafts (from the branches' text).
    EXPECT_EQ(plain.stats.draft_tokens > 0, plain.stats.verification.repaired_calls > 0) << id;
    EXPECT_LE(drafted.stats.accepted_draft_tokens, drafted.stats.draft_tokens) << id;
    fewer += drafted.stats.call_passes < plain.stats.call_passes;
  }
  EXPECT_GE(fewer, 2) << "drafts saved passes in fewer than two of four calls";
}

// A BFCL case decoded by SchemaWeaver as it is by default, with one of its switches off, and
// by jump-forward (the serial reference), each in a fresh session.
struct SwitchedOff {
  sw::bfcl::Case c;
  sw::CallResult plain, switched, reference;
};

SwitchedOff switched_off(const std::string& id, bool sw::WeaverOptions::*option) {
  SwitchedOff r{bfcl_case(id), {}, {}, {}};
  auto tools = sw::parse_tools(r.c.functions);
  sw::CallOptions options = weaving(160);
  r.plain = fresh_call(model(), r.c.messages, tools, options);
  options.weaver.*option = false;
  r.switched = fresh_call(model(), r.c.messages, tools, options);
  options.mode = sw::DecodeMode::JumpForward;
  r.reference = fresh_call(model(), r.c.messages, tools, options);
  return r;
}

// Lossless SchemaWeaver on a BFCL case where a branch, decoding its value without the values
// before it in view, writes another value than the serial reference: verification finds the
// disagreement on the logits of the write-back pass, and from there the reference writes the
// call, so it is jump-forward's (and right); unverified, the branch's value stands (and is wrong).
TEST(Weaver, VerificationRepairsAValueToTheSerialReference) {
  auto [c, verified, unverified, reference] = switched_off("live_multiple_236-106-2", &sw::WeaverOptions::verify);
  ASSERT_TRUE(verified.error.empty()) << verified.error;
  EXPECT_GE(verified.stats.verification.repaired_calls, 1) << verified.text;
  EXPECT_GT(verified.stats.verification.discarded_tokens, 0);
  EXPECT_EQ(unverified.stats.verification.checked_tokens, 0);
  EXPECT_TRUE(agree_where_decided(verified, reference));
  EXPECT_NE(unverified.text, verified.text);
  EXPECT_TRUE(sw::bfcl::check(c, verified.calls).valid) << verified.text;
  EXPECT_FALSE(sw::bfcl::check(c, unverified.calls).valid) << unverified.text;
  for (const sw::PhaseStats& p : verified.stats.phases) std::cout << "  " << p.name << ": " << p.passes << " passes\n";
}

int phase_tokens(const sw::CallResult& r, const std::string& name) {
  for (const sw::PhaseStats& p : r.stats.phases)
    if (p.name == name) return p.tokens;
  return 0;
}

// Unadopted (schemaweaver/no-adopt), the first branch's cells are computed again in the
// write-back pass and every choice of its value is checked there: more tokens in that pass, more
// choices checked, and still the reference's call where the two decide alike.
TEST(Weaver, UnadoptedFirstBranchIsComputedAgainAndChecked) {
  auto [c, adopted, recomputed, reference] = switched_off("multiple_103", &sw::WeaverOptions::adopt_first);
  ASSERT_TRUE(adopted.error.empty()) << adopted.error;
  ASSERT_TRUE(recomputed.error.empty()) << recomputed.error;
  EXPECT_GT(recomputed.stats.verification.checked_tokens, adopted.stats.verification.checked_tokens);
  EXPECT_GT(phase_tokens(recomputed, "write-back"), phase_tokens(adopted, "write-back"));
  EXPECT_TRUE(agree_where_decided(recomputed, reference)) << recomputed.text << "\n" << reference.text;
}

// The calls a turn completed (also when it was cut off at max_tokens later).
size_t final_calls(const sw::CallResult& r) {
  return size_t(std::count_if(r.stats.events.begin(), r.stats.events.end(),
                              [](const sw::CallEvent& e) { return e.kind == sw::CallEvent::Kind::Final; }));
}

// From a turn's second call on, the pass that writes a call back also guesses the start of the
// next call: a turn of several calls with one tool takes fewer passes per call; turns of one or
// two calls, and one whose calls add optional arguments (the guess wrong), give the same answer.
// Passes per call, since past a near-tie the turns may go on with other calls.
TEST(Weaver, WholeTurnGuessChangesThePassesNotTheAnswer) {
  int long_turns = 0, accepted = 0;
  double plain_per_call = 0, guessed_per_call = 0;
  for (const char* id : {"parallel_multiple_29", "parallel_multiple_45", "parallel_8", "simple_python_27"}) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    sw::CallOptions options = weaving(160);
    // Fresh sessions: a prompt reused from the cache has other rounding than one computed whole.
    sw::CallResult plain = fresh_call(model(), c.messages, tools, options);
    options.weaver.whole_turn = true;
    sw::CallResult guessed = fresh_call(model(), c.messages, tools, options);
    EXPECT_TRUE(agree_where_decided(plain, guessed)) << id;
    EXPECT_LE(guessed.stats.accepted_draft_tokens, guessed.stats.draft_tokens) << id;
    const size_t plain_calls = final_calls(plain), guessed_calls = final_calls(guessed);
    if (plain_calls <= 2 || guessed_calls <= 2) continue;
    // A guess may fail on a turn (an optional argument follows); over the long turns it pays.
    ++long_turns;
    accepted += guessed.stats.accepted_draft_tokens;
    plain_per_call += double(plain.stats.call_passes) / double(plain_calls);
    guessed_per_call += double(guessed.stats.call_passes) / double(guessed_calls);
  }
  ASSERT_GE(long_turns, 1) << "precondition: the model writes more than two calls in one of the turns";
  EXPECT_GT(accepted, 0);
  EXPECT_LT(guessed_per_call, plain_per_call) << "passes per call, summed over " << long_turns << " long turns";
}

TEST(Weaver, ProvisionalCallsOnlyForReadOnlyTools) {
  auto tools = weather_tools();
  const std::string request = "What is the weather like in Paris, in fahrenheit?";
  for (bool read_only : {false, true}) {
    tools[0].read_only = read_only;
    std::vector<sw::CallEvent> seen;
    sw::CallOptions options = weaving();
    options.on_call = [&](const sw::CallEvent& e) { seen.push_back(e); };
    sw::CallResult r = call(tools, request, options);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().kind, sw::CallEvent::Kind::Final);
    EXPECT_EQ(seen.back().call, r.calls.at(0));
    size_t provisional = std::count_if(seen.begin(), seen.end(), [](const sw::CallEvent& e) {
      return e.kind == sw::CallEvent::Kind::Provisional;
    });
    if (!read_only) {
      EXPECT_EQ(provisional, 0u) << "a tool not known to be read-only got a provisional call";
      continue;
    }
    ASSERT_EQ(provisional, 1u);
    const sw::CallEvent& first = seen.front();
    EXPECT_EQ(first.kind, sw::CallEvent::Kind::Provisional);
    EXPECT_EQ(first.call.arguments.size(), 1u);  // the required city only
    EXPECT_LE(first.at_ms, seen.back().at_ms);
    EXPECT_EQ(seen.back().replaces_provisional, !(first.call == seen.back().call));
  }
  // Switched off, a read-only tool gets none either.
  sw::CallOptions off = weaving();
  off.weaver.provisional = false;
  sw::CallResult r = call(tools, request, off);
  for (const sw::CallEvent& e : r.stats.events) EXPECT_EQ(e.kind, sw::CallEvent::Kind::Final);
}

TEST(Weaver, ToolChosenByTheCallerIsNotDecoded) {
  sw::CallOptions options = weaving();
  options.tool = "get_time";
  sw::CallResult r = call(weather_tools(), "What is the weather like in Paris?", options);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.calls.at(0).name, "get_time");
  // No choice of the model lies inside the name (how it writes the opener may be one).
  const size_t name_at = r.text.find("\"get_time\"");
  ASSERT_NE(name_at, std::string::npos);
  for (const sw::Decision& d : r.stats.decisions) {
    EXPECT_FALSE(d.offset > name_at && d.offset < name_at + 10) << "a choice at byte " << d.offset << " of " << r.text;
  }

  options.tool = "get_date";
  EXPECT_THROW(call(weather_tools(), "hi", options), sw::Error);
  options.tool = "";
  options.given_arguments = {"city"};
  EXPECT_THROW(call(weather_tools(), "hi", options), sw::Error);  // arguments of which tool?
  options.tool = "get_weather";
  options.given_arguments = {"town"};
  EXPECT_THROW(call(weather_tools(), "hi", options), sw::Error);
}

// A person with three required fields, as a response schema.
sw::ToolSpec person_schema() {
  return sw::parse_response_schema(sw::Json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
      "city": {"type": "string", "enum": ["Paris", "Berlin", "Rome"]}},
      "required": ["name", "age", "city"], "additionalProperties": false})"), "person");
}

// An answer in a response schema (structured outputs): its object alone, no name, no markers;
// in branches the same object as jump-forward's, its fields checked by the verifier; every
// serial mode under the schema's grammar; nothing of the tools' prompt shown.
TEST(Weaver, AnswerInASchemaIsItsObjectInEveryMode) {
  const sw::ToolSpec person = person_schema();
  auto schema = sw::compile_schema(model(), person);
  const std::vector<sw::Message> request = {{"user", "Anna is 31 and lives in Rome. Describe her as JSON."}};
  sw::Session session(model());
  sw::CallResult reference;
  for (sw::DecodeMode mode : {sw::DecodeMode::JumpForward, sw::DecodeMode::Constrained, sw::DecodeMode::Speculative,
                              sw::DecodeMode::SchemaWeaver}) {
    sw::CallOptions options = weaving();
    options.mode = mode;
    sw::CallResult r = session.call(request, *schema, options);
    ASSERT_TRUE(r.error.empty()) << sw::to_string(mode) << ": " << r.error << "\n" << r.text;
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "person");
    EXPECT_EQ(sw::Json::parse(r.text), r.calls[0].arguments) << r.text;  // the text is the object, whole
    EXPECT_EQ(sw::schema_violation({person}, r.calls[0]), "");
    ASSERT_EQ(r.stats.events.size(), 1u);  // the object is announced once it closes
    if (mode == sw::DecodeMode::JumpForward) reference = r;
    if (mode != sw::DecodeMode::SchemaWeaver) continue;
    EXPECT_EQ(r.text, reference.text);
    EXPECT_GT(r.stats.verification.checked_tokens, 0);
    EXPECT_LT(r.stats.call_passes, reference.stats.call_passes) << "three fields, one pass of branches a step";
    EXPECT_EQ(r.stats.phases.front().name, "skeleton");  // no name phase: nothing names the object
  }
  // The prompt is the conversation's own, without tools: a reply in text would see the same.
  sw::CallOptions text_reply = weaving();
  text_reply.tool_choice = sw::ToolChoice::None;
  EXPECT_EQ(reference.stats.prompt_tokens, session.check(request, std::vector<sw::ToolSpec>{}, text_reply));
  sw::CallOptions options = weaving();
  options.mode = sw::DecodeMode::Free;
  EXPECT_THROW(session.call(request, *schema, options), sw::Error);
  options = weaving();
  options.tool_choice = sw::ToolChoice::Auto;
  EXPECT_THROW(session.call(request, *schema, options), sw::Error);
  options = weaving();
  options.calls_as_list = true;
  EXPECT_THROW(session.call(request, *schema, options), sw::Error);
}

// An answer in a schema cut off at max_tokens is closed by the shortest text its grammar allows
// - in branches each unfinished value so - and stays valid, still marked as cut; its text is
// told whole. A call cut so is never closed: it stays an error.
TEST(Weaver, ACutAnswerInASchemaIsClosedAndACallIsNot) {
  const sw::ToolSpec person = person_schema();
  auto schema = sw::compile_schema(model(), person);
  const std::vector<sw::Message> request = {{"user", "Anna is 31 and lives in Rome. Describe her as JSON."}};
  sw::Session session(model());
  for (int max_tokens : {2, 4}) {
    for (sw::DecodeMode mode : {sw::DecodeMode::JumpForward, sw::DecodeMode::Constrained, sw::DecodeMode::SchemaWeaver}) {
      sw::CallOptions options = weaving(max_tokens);
      options.mode = mode;
      options.weaver.plan_by_cost = false;  // the values in branches: cut there
      std::string told;
      options.on_text = [&](const std::string& piece) { told += piece; };
      const sw::CallResult r = session.call(request, *schema, options);
      const std::string label = sw::to_string(mode) + " at " + std::to_string(max_tokens) + ": " + r.text;
      EXPECT_TRUE(r.stopped_at_max_tokens) << label;
      ASSERT_TRUE(r.error.empty()) << label << " " << r.error;
      ASSERT_EQ(r.calls.size(), 1u) << label;
      EXPECT_EQ(sw::Json::parse(r.text), r.calls[0].arguments) << label;
      EXPECT_EQ(sw::schema_violation({person}, r.calls[0]), "") << label;
      EXPECT_EQ(told, r.text) << label;
      if (mode == sw::DecodeMode::SchemaWeaver) EXPECT_EQ(r.stats.phases.back().name, "values") << label;
    }
  }
  sw::CallOptions options = weaving(3);
  const sw::CallResult cut = call(weather_tools(), "What is the weather like in Paris?", options);
  EXPECT_TRUE(cut.stopped_at_max_tokens);
  EXPECT_FALSE(cut.error.empty()) << "a call cut off is not closed: " << cut.text;
}

// A response schema beside tools under auto (CallOptions::answer_schema): where the model does
// not call (SmolLM2 describes the weather in words) its reply is thrown away at the opening and the
// schema's object decoded from the prompt, which shows the tools; told as text, never as a call.
// The same in branches as in jump-forward. The schema is refused where it cannot apply.
TEST(Weaver, AReplyBesideToolsIsTheAnswerSchemasObject) {
  const sw::ToolSpec report = sw::parse_response_schema(sw::Json::parse(R"({"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 20}, "sunny": {"type": "boolean"}},
      "required": ["city", "sunny"], "additionalProperties": false})"), "report");
  auto tools = sw::compile_tools(model(), weather_tools());
  const std::vector<sw::Message> request = {{"user", "What is the weather in Paris?"}};
  sw::Session session(model());
  sw::CallOptions free_reply = weaving();
  free_reply.tool_choice = sw::ToolChoice::Auto;
  ASSERT_TRUE(session.call(request, *tools, free_reply).text_reply) << "precondition: SmolLM2 replies in text";
  std::string reference;
  for (sw::DecodeMode mode : {sw::DecodeMode::JumpForward, sw::DecodeMode::SchemaWeaver}) {
    sw::CallOptions options = weaving();
    options.mode = mode;
    options.tool_choice = sw::ToolChoice::Auto;
    options.answer_schema = sw::compile_schema(model(), report);
    std::string told;
    int calls_told = 0;
    options.on_text = [&](const std::string& piece) { told += piece; };
    options.on_call = [&](const sw::CallEvent&) { ++calls_told; };
    const sw::CallResult r = session.call(request, *tools, options);
    ASSERT_TRUE(r.error.empty()) << r.error << "\n" << r.text;
    EXPECT_TRUE(r.schema_answer);
    EXPECT_FALSE(r.text_reply);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "report");
    EXPECT_EQ(sw::Json::parse(r.text), r.calls[0].arguments) << r.text;
    EXPECT_EQ(sw::schema_violation({report}, r.calls[0]), "");
    EXPECT_EQ(told, r.text);
    EXPECT_EQ(calls_told, 0);
    if (reference.empty()) reference = r.text;
    EXPECT_EQ(r.text, reference) << sw::to_string(mode);
  }
  sw::CallOptions options = weaving();
  options.answer_schema = sw::compile_schema(model(), report);
  EXPECT_THROW(session.call(request, *tools, options), sw::Error);  // required: a call
  options.tool_choice = sw::ToolChoice::Auto;
  options.mode = sw::DecodeMode::Free;
  EXPECT_THROW(session.call(request, *tools, options), sw::Error);
  options.mode = sw::DecodeMode::JumpForward;
  options.answer_schema = tools;  // not a schema's set
  EXPECT_THROW(session.call(request, *tools, options), sw::Error);
}

TEST(Weaver, GivenArgumentSetGetsBranchesAndNoOptionalDecision) {
  sw::CallOptions options = weaving();
  options.tool = "get_weather";
  options.given_arguments = {"city", "unit"};
  sw::CallResult r = call(weather_tools(), "What is the weather like in Paris, in celsius?", options);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.calls.at(0).arguments.size(), 2u);
  EXPECT_EQ(r.calls.at(0).arguments["unit"], "celsius");
  ASSERT_EQ(r.stats.events.size(), 1u);  // final as soon as the values are known
}

// A turn with several calls: after each call the model decides whether another follows, and
// each goes through the same pipeline. The pool must hold a case where the model writes several.
TEST(Weaver, SeveralCallsInOneTurn) {
  int several = 0;
  for (const char* id : {"multiple_178", "parallel_8", "parallel_multiple_7"}) {
    sw::bfcl::Case c = bfcl_case(id);
    sw::CallResult r = fresh_call(model(), c.messages, sw::parse_tools(c.functions), weaving(256));
    if (!r.error.empty()) continue;  // cut off at max_tokens, say: no turn to check
    several += r.calls.size() >= 2;
    int skeletons = 0;
    for (const sw::PhaseStats& p : r.stats.phases) skeletons += p.name == "skeleton" ? p.passes : 0;
    EXPECT_EQ(skeletons, int(r.calls.size())) << id;  // one skeleton pass per call
    ASSERT_EQ(r.stats.events.size(), r.calls.size()) << id;
    for (size_t i = 0; i < r.calls.size(); ++i) {
      EXPECT_EQ(r.stats.events[i].index, int(i)) << id;
      EXPECT_EQ(r.stats.events[i].call, r.calls[i]) << id;
    }
  }
  EXPECT_GE(several, 1) << "precondition: the model writes a valid turn of several calls for a case of the pool";
}

// The end of the first call's JSON object in a turn's text (after its closing brace).
size_t first_call_end(const std::string& text) {
  return std::min(text.size(), sw::json_value_end(text, std::min(text.find('{'), text.size())));
}

// parallel_tool_calls false: the turn ends after the first call, which is the one the model
// writes first without the limit (up to a near-tie), in every constrained mode; on turns of
// one call as on turns of several, of which the pool must hold one.
TEST(Weaver, MaxCallsEndsTheTurn) {
  int several = 0;
  for (const char* id : {"multiple_178", "parallel_8", "parallel_multiple_7", "parallel_multiple_98"}) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    for (sw::DecodeMode mode : {sw::DecodeMode::SchemaWeaver, sw::DecodeMode::Constrained}) {
      sw::CallOptions options = weaving(128);
      options.mode = mode;
      // Fresh sessions: a prompt reused from the cache has other rounding than one computed whole.
      sw::CallResult any = fresh_call(model(), c.messages, tools, options);
      options.max_calls = 1;
      sw::CallResult one = fresh_call(model(), c.messages, tools, options);
      ASSERT_TRUE(one.error.empty()) << id << ": " << one.error << "\n" << one.text;
      ASSERT_EQ(one.calls.size(), 1u) << one.text;
      several += any.calls.size() >= 2;
      Answer first_of_any = answer_of(any), first_of_one = answer_of(one);
      first_of_any.text.resize(std::min(first_of_any.text.size(), first_call_end(any.text)));
      first_of_one.text.resize(first_call_end(one.text));
      EXPECT_TRUE(agree_where_decided(first_of_any, first_of_one)) << id << " " << to_string(mode);
    }
  }
  EXPECT_GE(several, 1) << "precondition: the model writes several calls for a case of the pool";
}

// A turn cut off at max_tokens is judged by its text in every mode (the same text, the same
// answer): where SchemaWeaver and jump-forward wrote the same text under a budget, they give the
// same calls and the same error. Qwen2.5-Coder writes calls as `<tool_call>` blocks, so some
// budget ends a turn after a call's JSON closed but before its block's closer: the call stands in
// both (the weaver used to call that turn failed). The smallest fetched model whose call format
// can be cut there (SmolLM2 writes an array, which a cut leaves unclosed).
TEST(Weaver, ATurnCutAtMaxTokensIsJudgedByItsTextInEveryMode) {
  auto coder = sw::Model::load({SW_TEST_MODEL_DIR "/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"});
  auto serial = fresh_session(coder), woven = fresh_session(coder);
  const std::vector<sw::Message> messages = {{"user", "What is the weather like in Paris?"}};
  int compared = 0, kept_after_cut = 0;
  for (int budget = 6; budget <= 16; ++budget) {
    sw::CallOptions options = weaving(budget);
    options.mode = sw::DecodeMode::JumpForward;
    const sw::CallResult reference = serial->call(messages, weather_tools(), options);
    options.mode = sw::DecodeMode::SchemaWeaver;
    const sw::CallResult r = woven->call(messages, weather_tools(), options);
    if (r.text != reference.text) continue;
    ++compared;
    EXPECT_EQ(r.error, reference.error) << budget << ": " << r.text;
    EXPECT_EQ(r.calls, reference.calls) << budget << ": " << r.text;
    kept_after_cut += r.stopped_at_max_tokens && !r.calls.empty();
  }
  std::cout << compared << " budgets compared, " << kept_after_cut << " cut after a call closed\n";
  EXPECT_GE(compared, 5);
  EXPECT_GE(kept_after_cut, 1) << "precondition: a budget ends the turn between a call's JSON and its closer";
}

// Calls as one list (the "list" switch): the turn is one JSON list in the format's block, and
// SchemaWeaver writes in it what jump-forward writes (up to a near-tie). Qwen2.5-Coder-0.5B ends
// its turn after the first of several `<tool_call>` blocks on these parallel cases; the pool
// must hold one where the list carries more calls than the model's own format.
TEST(Weaver, CallsAsAListAreOneListInEveryMode) {
  auto coder = sw::Model::load({SW_TEST_MODEL_DIR "/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"});
  int more_calls = 0;
  for (const char* id : {"parallel_184", "parallel_155", "parallel_20"}) {
    sw::bfcl::Case c = bfcl_case(id);
    auto tools = sw::parse_tools(c.functions);
    sw::CallOptions options = weaving(160);
    options.mode = sw::DecodeMode::JumpForward;
    const sw::CallResult own = fresh_call(coder, c.messages, tools, options);
    options.calls_as_list = true;
    const sw::CallResult listed = fresh_call(coder, c.messages, tools, options);
    ASSERT_TRUE(listed.error.empty()) << id << ": " << listed.error << "\n" << listed.text;
    EXPECT_EQ(listed.text.rfind("<tool_call>\n[\n    {", 0), 0u) << listed.text;
    more_calls += listed.calls.size() > own.calls.size();
    options.mode = sw::DecodeMode::SchemaWeaver;
    const sw::CallResult woven = fresh_call(coder, c.messages, tools, options);
    EXPECT_TRUE(agree_where_decided(answer_of(listed), answer_of(woven))) << id;
    if (woven.text == listed.text) EXPECT_EQ(woven.calls, listed.calls) << id;
  }
  EXPECT_GE(more_calls, 1) << "precondition: the list carries more calls than the model's own blocks on a case";
  sw::CallOptions free_list;
  free_list.mode = sw::DecodeMode::Free;
  free_list.calls_as_list = true;
  try {
    fresh_call(coder, {{"user", "What is the weather like in Paris?"}}, weather_tools(), free_list);
    ADD_FAILURE() << "calls as a list in the free mode were not refused";
  } catch (const sw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("free mode"), std::string::npos) << e.what();
  }
}

float max_abs_difference(const float* a, const float* b, int n) {
  float worst = 0;
  for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// After the write-back the conversation's cache must be what a serial prefill of the same
// tokens gives: the next-token logits agree within float tolerance.
TEST(Weaver, WriteBackEqualsSerialPrefill) {
  const sw::LoadedModel& m = loaded(*model());
  for (const char* id : {"simple_python_27", "simple_python_243"}) {
    sw::bfcl::Case c = bfcl_case(id);
    const sw::bfcl::Case* found = &c;
    auto tools = sw::parse_tools(found->functions);
    sw::Context woven(m, 2048);
    sw::PassCounter passes;
    woven.start_from(m.tokenize(sw::render_prompt(*model(), found->messages, tools), true), passes);
    sw::CallTracker tracker(sw::Clock::now());
    sw::CallOptions options = weaving();
    options.weaver.padding = false;
    auto compiled = sw::compile_tools(model(), tools);
    sw::CallStats stats;
    sw::CallHistory history;
    sw::WeaveResult result =
        sw::weave(woven, m, sw::compiled(*compiled), options, {nullptr, history}, tracker, nullptr,
                  sw::Chooser::greedy(), stats);
    ASSERT_TRUE(result.failure.empty()) << result.failure;

    // The reference: the same tokens prefilled serially, the prompt in one batch and the call
    // token by token. Batches of different sizes take different kernels, so logits agree only
    // within float tolerance; the noise floor is the difference between two serial prefills.
    const std::vector<llama_token>& tokens = woven.history();
    sw::Context serial(m, 2048), one_batch(m, 2048);
    one_batch.append(tokens, passes);
    size_t prompt = tokens.size() - size_t(result.generation.passes.tokens);
    serial.append({tokens.begin(), tokens.begin() + long(prompt)}, passes);
    for (size_t i = prompt; i < tokens.size(); ++i) serial.append({tokens[i]}, passes);
    float noise = max_abs_difference(one_batch.last_logits(), serial.last_logits(), m.vocab_size());
    float worst = max_abs_difference(woven.last_logits(), serial.last_logits(), m.vocab_size());
    auto best = [&](const float* logits) { return sw::pick_greedy(logits, m.vocab_size(), [](llama_token) { return true; }); };
    EXPECT_EQ(best(woven.last_logits()), best(serial.last_logits())) << id;
    EXPECT_LT(worst, 2 * noise + 0.05f) << id << ": max |difference| " << worst << ", between serial prefills " << noise;
  }
}

TEST(Weaver, CostCurveIsMeasured) {
  const sw::LoadedModel& m = loaded(*model());
  sw::Context context(m, 1024);
  sw::PassCostTable table = sw::measure_cost_table(context, m, 4, 3, 64);
  ASSERT_EQ(table.one_row_ms.size(), 4u);
  ASSERT_EQ(table.all_rows_ms.size(), 4u);
  for (double ms : table.one_row_ms) EXPECT_GT(ms, 0);
  EXPECT_EQ(table.all_rows_ms[0], table.one_row_ms[0]);  // one token keeps one row either way
  EXPECT_GE(table.ms_per_kept_row, 0);
  const sw::CostCurve curve = sw::curve_of(table);
  ASSERT_EQ(curve.rows_ms.size(), 4u);
  EXPECT_EQ(curve.rows_ms[0], 0);
  for (size_t n = 1; n < 4; ++n) EXPECT_EQ(curve.rows_ms[n], std::max(0.0, table.all_rows_ms[n] - table.one_row_ms[n]));
  EXPECT_EQ(context.used(), 0);  // the scratch sequence is left empty
}

// Every pass is a measurement of what passes cost (PassCosts learns from them).
TEST(Weaver, TheContextTellsItsObserverEveryPass) {
  const sw::LoadedModel& m = loaded(*model());
  sw::Context context(m, 256);
  struct Seen {
    int tokens, rows;
    double ms;
  };
  std::vector<Seen> seen;
  context.observe_passes([&](int tokens, int rows, double ms) { seen.push_back({tokens, rows, ms}); });
  sw::PassCounter passes;
  const std::vector<llama_token> prompt = m.tokenize("The weather in Paris", false);
  context.append(prompt, passes);
  context.append({m.tokenize(" today", false).front()}, passes);
  const std::vector<llama_token> more = m.tokenize(" is sunny and warm", false);
  context.append(more, passes, std::vector<bool>(more.size(), true));
  ASSERT_EQ(seen.size(), size_t(passes.passes));
  EXPECT_EQ(seen[0].tokens, int(prompt.size()));
  EXPECT_EQ(seen[0].rows, 1);
  EXPECT_EQ(seen[1].tokens, 1);
  EXPECT_EQ(seen[2].tokens, int(more.size()));
  EXPECT_EQ(seen[2].rows, seen[2].tokens);  // every row kept
  EXPECT_EQ(seen[0].tokens + seen[1].tokens + seen[2].tokens, passes.tokens);
  for (const Seen& pass : seen) EXPECT_GT(pass.ms, 0);
}

// An argument the session has not filled before is expected to take what this model's values of
// its kind took in other tools' calls, not a fixed prior; an enum's members still speak for it.
TEST(Weaver, AnArgumentNotSeenIsExpectedToTakeWhatItsKindTook) {
  const sw::LoadedModel& m = loaded(*model());
  sw::CallHistory history;
  const sw::Property city{"city", sw::Schema{sw::Type::String}, true};
  const double prior = sw::expected_value(m, history, "get_weather", city).tokens;
  history.record_value("find_beer", "brewery", sw::json_kind(sw::Json("Sierra Nevada")), 3);
  history.record_value("find_beer", "count", sw::json_kind(sw::Json(4)), 1);
  EXPECT_DOUBLE_EQ(sw::expected_value(m, history, "get_weather", city).tokens, 3);
  EXPECT_NE(prior, 3);
  sw::Schema unit{sw::Type::String};
  unit.enum_values = {"celsius", "fahrenheit"};
  EXPECT_DOUBLE_EQ(sw::expected_value(m, history, "get_weather", {"unit", unit, false}).tokens,
                   sw::expected_value(m, sw::CallHistory{}, "get_weather", {"unit", unit, false}).tokens);
}

// The plan prices each call on the machine's pass costs: where every token of a pass costs its
// share, the values are decoded serially - jump-forward's passes and answer exactly, by its one
// decoder where every tool's call would go so -; where a
// wide pass costs little more than a narrow one, in branches - jump-forward's calls in fewer
// passes. The plan and the passes by width are in the call's stats.
TEST(Weaver, EachCallIsPlannedByWhatItsPassesCost) {
  const std::vector<double> compute_bound = {65, 106.6, 146, 186.5, 224, 263, 300, 370.5};
  const std::vector<double> memory_bound = {20, 20.2, 20.4, 20.6, 20.8, 21, 21.2, 21.4};
  sw::bfcl::Case c = bfcl_case("simple_python_27");  // three required numbers
  auto tools = sw::parse_tools(c.functions);
  auto planned_on = [&](const std::vector<double>& costs, sw::DecodeMode mode) {
    sw::Session session(model());
    session.use_pass_costs(costs);
    sw::CallOptions options;
    options.max_tokens = 96;
    options.mode = mode;
    return session.call(c.messages, tools, options);
  };
  sw::CallResult reference = planned_on(compute_bound, sw::DecodeMode::JumpForward);
  sw::CallResult serial = planned_on(compute_bound, sw::DecodeMode::SchemaWeaver);
  ASSERT_EQ(serial.stats.plans.size(), 1u);
  EXPECT_EQ(serial.stats.plans[0].tool, c.functions[0]["name"]);
  EXPECT_FALSE(serial.stats.plans[0].branches);
  EXPECT_GT(serial.stats.plans[0].branches_ms, serial.stats.plans[0].serial_ms);
  EXPECT_EQ(serial.text, reference.text);
  EXPECT_EQ(serial.calls, reference.calls);
  EXPECT_EQ(serial.stats.call_passes, reference.stats.call_passes);
  ASSERT_EQ(serial.stats.phases.size(), 1u) << "one decoder for the turn, as jump-forward's";
  EXPECT_EQ(serial.stats.phases[0].name, reference.stats.phases[0].name);

  sw::CallResult woven = planned_on(memory_bound, sw::DecodeMode::SchemaWeaver);
  ASSERT_EQ(woven.stats.plans.size(), 1u);
  EXPECT_TRUE(woven.stats.plans[0].branches);
  EXPECT_LT(woven.stats.plans[0].branches_ms, woven.stats.plans[0].serial_ms);
  EXPECT_TRUE(agree_where_decided(reference, woven));
  EXPECT_LT(woven.stats.call_passes, reference.stats.call_passes);

  // Every pass of the answer is counted by its width, what bench/replay.py prices.
  for (const sw::CallResult* r : {&reference, &serial, &woven}) {
    int passes = 0;
    for (const auto& [tokens, count] : r->stats.passes_by_tokens) passes += count;
    EXPECT_EQ(passes, r->stats.call_passes);
    EXPECT_GT(r->stats.pass_ms, 0);
    EXPECT_LE(r->stats.pass_ms, r->stats.call_ms);
  }
}

// A call of one required argument is never faster in a branch, on any machine: it goes serially.
TEST(Weaver, OneArgumentCallGoesSerially) {
  sw::CallOptions options;
  options.max_tokens = 96;
  sw::CallResult r = call(weather_tools(), "What is the weather like in Paris?", options);
  ASSERT_EQ(r.stats.plans.size(), 1u);
  EXPECT_FALSE(r.stats.plans[0].branches);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments["city"], "Paris");
}

}  // namespace

// A control token that would make tool_choice auto's opening text (a turn marker, as
// Qwen2.5-Coder writes <|im_start|> before its call after tool results) is not read into it:
// JSON naming a tool after it still opens a call, and words after it are still text.
TEST(Opening, ATurnMarkerIsNotTheOpeningsText) {
  const sw::LoadedModel& m = sw::loaded(*model());
  const std::vector<llama_token> marker = m.tokenize("<|im_start|>", false);
  ASSERT_EQ(marker.size(), 1u);
  ASSERT_TRUE(llama_vocab_get_attr(m.vocab, marker[0]) & LLAMA_TOKEN_ATTR_CONTROL);
  const auto grown = [&](const std::string& after) {
    std::string text;
    sw::Opening state = sw::grow_opening(text, marker[0], m, weather_tools());
    EXPECT_EQ(state, sw::Opening::Undecided);
    EXPECT_EQ(text, "");
    for (llama_token token : m.tokenize(after, false)) state = sw::grow_opening(text, token, m, weather_tools());
    return state;
  };
  EXPECT_EQ(grown("\n{\"name\": \"get_weather\""), sw::Opening::Call);
  EXPECT_EQ(grown("\nIt is sunny in Paris."), sw::Opening::Text);
}
