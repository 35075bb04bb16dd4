// schemaweaver/bfcl.h - the Berkeley Function Calling Leaderboard (BFCL v4) harness.
//
// Loads question files and their possible answers (any file in BFCL's format, by path),
// samples cases evenly over the number of arguments, and checks calls with BFCL's AST rules:
// function name; required parameters present; no unknown parameters; every value among the
// possible answers under BFCL's python type rules (an int is accepted for a float, strings
// compared lower-cased without spaces and ",./-_*^"); calls of a parallel turn matched in
// any order. Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemaweaver/engine.h"

namespace sw::bfcl {

struct Case {
  std::string id;
  std::string category;           // from the file name: BFCL_v4_<category>.json
  std::vector<Message> messages;  // the first turn of the question
  Json functions;                 // BFCL function docs, as in the file
  Json ground_truth;              // list of {function name: {param: [possible values]}}
  int argument_count = 0;         // parameters the first expected call must set
};

// Reads a question file and its possible-answer file (JSON lines) and joins them by id.
// Questions without an answer are skipped (irrelevance sets have none). Throws Error on an
// unreadable file or a malformed line, naming the file and line.
std::vector<Case> load_cases(const std::string& questions_path, const std::string& answers_path);

// Throws Error naming the case if its function docs or possible answers are not of the forms
// BFCL writes (load_cases checks every case it reads; check() relies on them).
void check_forms(const Case& c);

// The standard categories under a BFCL data folder (bfcl_eval/data).
std::vector<Case> load_standard_categories(const std::string& data_dir,
                                           const std::vector<std::string>& categories);
const std::vector<std::string>& standard_categories();

// n cases, as evenly as possible over argument-count buckets 1, 2, 3, 4+ (0 counts as 1),
// each bucket drawn uniformly with a fixed seed. Returned in a stable order.
std::vector<Case> sample_by_argument_count(const std::vector<Case>& cases, size_t n, uint32_t seed);

// The calls a case expects: each tool with the arguments every possible answer sets (those
// whose possible values do not include "", BFCL's mark of an optional argument).
struct ExpectedCall {
  std::string tool;
  std::vector<std::string> arguments;
};
std::vector<ExpectedCall> expected_calls(const Json& ground_truth);

struct Verdict {
  bool valid = false;
  std::string error;  // why not, in BFCL's words where it has them
};

Verdict check(const Case& c, const std::vector<ToolCall>& calls);

// The case's function docs as OpenAI tools ({"type": "function", "function": {...}}), their
// python type names written as JSON Schema's (dict -> object, float -> number, tuple -> array,
// any -> no type), as a server that speaks the OpenAI API takes them and a JSON Schema
// validator reads them.
Json openai_tools(const Json& functions);

}  // namespace sw::bfcl
