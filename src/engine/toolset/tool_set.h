// A compiled tool set: the tools of a request checked once, and what calls with them need -
// the grammars of the calls, of each value and of the serial pieces, the skeletons' tokens,
// the tools' system message - built on first use and then shared by every call and thread.
//
// Most of these depend on text the call has reached (the format's opener, what the cache does
// not hold yet), so they are compiled where a call first needs them and kept by that text, as
// XGrammar's compiler keeps compiled grammars; the handful of variants a tool set meets is
// compiled once. Every piece is a pure function of its key, so a call with a compiled set
// decodes what a call with a fresh one decodes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/constraint/grammar.h"
#include "engine/model/model.h"
#include "engine/toolset/call_grammar.h"
#include "engine/toolset/skeleton.h"
#include "schemaweaver/engine.h"

namespace sw {

// What this thread has spent compiling tool sets so far (ms): a call reads it before and after
// to learn what it compiled itself (CallStats::compile_ms).
double compile_clock_ms();

// Values built on first use under a key and kept; beyond kCapacity keys a value is built and
// not kept (a tool set never meets that many variants; a stream of distinct texts must not grow
// it without end).
template <class T>
class Memo {
 public:
  static constexpr size_t kCapacity = 256;
  std::shared_ptr<const T> get(const std::string& key, const std::function<std::shared_ptr<const T>()>& build) const;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<const T>> values_;
};

class CompiledToolSet final : public ToolSet {
 public:
  // Checks the tools and compiles what every call needs (compile_tools).
  // `format`: how its calls are written; null: the model's own format.
  static std::shared_ptr<const CompiledToolSet> compile(std::shared_ptr<const Model> model,
                                                        std::vector<ToolSpec> tools,
                                                        const CallFormat* format = nullptr);
  // The bare set; compile() is what callers use. Throws Error if two tools share a name.
  CompiledToolSet(std::shared_ptr<const Model> model, std::vector<ToolSpec> tools, CallFormat format);

  const LoadedModel& model() const { return loaded(*model_); }
  const std::shared_ptr<const Model>& model_handle() const { return model_; }
  // How the calls of this set are written (the model's format, or its list form).
  const CallFormat& format() const { return format_; }
  const ToolSpec* find(const std::string& name) const;
  // The set of one of its tools (a tool chosen by the caller), compiled once. Throws Error if
  // no tool has this name.
  std::shared_ptr<const CompiledToolSet> only(const std::string& name) const;
  // The same tools with the turn's calls written as one JSON list (CallFormat::as_list),
  // compiled once.
  std::shared_ptr<const CompiledToolSet> as_list() const;
  // The same tools with the calls written as the model opened them (CallFormat::opened_as),
  // compiled once per form.
  std::shared_ptr<const CompiledToolSet> opened_as(const std::string& fence, bool list) const;

  // The system message that shows the tools, with the user's own system text.
  std::shared_ptr<const std::string> system_prompt(const std::string& user_system) const;
  // A whole turn of calls (max_calls: at most, 0 any number).
  std::shared_ptr<const Grammar> calls(int max_calls) const;
  // SchemaWeaver's pieces, each after `prefix` (text its sentence starts with); see
  // call_grammar.h. `argument` and `tool` belong to this set.
  std::shared_ptr<const Grammar> head(const std::string& prefix) const;
  std::shared_ptr<const Grammar> value(const Property& argument, const std::string& prefix) const;
  // The rest of `tool`'s call after `prefix`: its optional arguments (where they may follow)
  // and its end, or the whole arguments object if no member is written yet.
  std::shared_ptr<const Grammar> tail(const ToolSpec& tool, const std::string& prefix, OptionalArguments optional,
                                      Members members, NextCall next) const;
  // The serial reference's grammar of `tool`'s call from its name on (after `before`, text of
  // the turn before the call's head): the `branches` (required there) first, then the optional
  // arguments where they may follow.
  std::shared_ptr<const Grammar> reference(const ToolSpec& tool, const std::vector<const Property*>& branches,
                                           OptionalArguments optional, NextCall next,
                                           const std::string& before = "") const;
  // The skeleton of a call whose head text is `head_text`, a branch per argument of `arguments`.
  std::shared_ptr<const Skeleton> skeleton(const std::string& head_text,
                                           const std::vector<const Property*>& arguments) const;

 private:
  std::shared_ptr<const Model> model_;
  CallFormat format_;
  Memo<std::string> prompts_;
  Memo<Grammar> grammars_;
  Memo<Skeleton> skeletons_;
  Memo<CompiledToolSet> subsets_;  // by a tool's name, "" for the list form, "opened ..." for opened_as
};

// The library's only kind of ToolSet.
inline const CompiledToolSet& compiled(const ToolSet& set) { return static_cast<const CompiledToolSet&>(set); }

}  // namespace sw
