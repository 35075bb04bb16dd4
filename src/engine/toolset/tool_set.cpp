#include "engine/toolset/tool_set.h"

#include <chrono>
#include <cstdint>
#include <list>
#include <set>

#include "engine/toolset/call_grammar.h"

namespace sw {
namespace {

thread_local double compiling_ms = 0;
thread_local int compiling_depth = 0;  // compilations running on this thread, one inside another

// Times a compilation on this thread's clock; a compilation inside another counts once.
template <class F>
auto timed(F&& build) {
  auto started = std::chrono::steady_clock::now();
  ++compiling_depth;
  struct Leave {
    std::chrono::steady_clock::time_point started;
    ~Leave() {
      if (--compiling_depth == 0)
        compiling_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    }
  } leave{started};
  return build();
}

// Keys name a tool or an argument by its address: the set owns its specs and never changes them.
std::string address(const void* p) { return std::to_string(reinterpret_cast<uintptr_t>(p)); }

std::string canonical_json(const std::vector<ToolSpec>& tools) {
  Json canonical = Json::array();
  for (const ToolSpec& t : tools) canonical.push_back({t.to_openai(), t.read_only});
  return canonical.dump();
}

std::vector<Property> optional_arguments(const ToolSpec& tool) {
  std::vector<Property> optional;
  for (const Property& p : tool.arguments) {
    if (!p.required) optional.push_back(p);
  }
  return optional;
}

}  // namespace

double compile_clock_ms() { return compiling_ms; }

// A schema's answers are keyed apart from a set of its one tool (the same spec, another format).
std::string key_prefix(const CallFormat& format) { return format.named ? "" : "schema "; }

ToolSet::ToolSet(std::vector<ToolSpec> tools, const std::string& key_prefix)
    : tools_(std::move(tools)), key_(key_prefix + canonical_json(tools_)) {}

template <class T>
std::shared_ptr<const T> Memo<T>::get(const std::string& key,
                                      const std::function<std::shared_ptr<const T>()>& build) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = values_.find(key);
    if (found != values_.end()) return found->second;
  }
  // Built outside the lock: two threads may build the same value once each, never wait.
  std::shared_ptr<const T> value = timed(build);
  std::lock_guard<std::mutex> lock(mutex_);
  if (values_.size() < kCapacity) values_.emplace(key, value);
  return value;
}

CompiledToolSet::CompiledToolSet(std::shared_ptr<const Model> model, std::vector<ToolSpec> tools, CallFormat format)
    : ToolSet(std::move(tools), key_prefix(format)), model_(std::move(model)), format_(std::move(format)) {
  std::set<std::string> names;
  for (const ToolSpec& t : this->tools()) {
    if (!names.insert(t.name).second) throw Error("two tools are named '" + t.name + "'");
  }
}

const ToolSpec* CompiledToolSet::find(const std::string& name) const {
  for (const ToolSpec& t : tools()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::shared_ptr<const CompiledToolSet> CompiledToolSet::only(const std::string& name) const {
  const ToolSpec* tool = find(name);
  if (!tool) throw Error("no tool is named '" + name + "'");
  return subsets_.get(name, [&] { return compile(model_, {*tool}, &format_); });
}

std::shared_ptr<const CompiledToolSet> CompiledToolSet::as_list() const {
  // No tool is named "" (tool specs are checked), so that key is free for the list form.
  return subsets_.get("", [&] {
    const CallFormat list = format_.as_list();
    return compile(model_, tools(), &list);
  });
}

std::shared_ptr<const CompiledToolSet> CompiledToolSet::opened_as(const std::string& fence, bool list) const {
  // A key with a space, which no tool's name holds.
  return subsets_.get("opened " + std::to_string(list) + " " + fence, [&] {
    const CallFormat opened = format_.opened_as(fence, list);
    return compile(model_, tools(), &opened);
  });
}

std::shared_ptr<const std::string> CompiledToolSet::system_prompt(const std::string& user_system) const {
  return prompts_.get(user_system, [&] {
    return std::make_shared<const std::string>(format_.system_prompt(tools(), user_system));
  });
}

std::shared_ptr<const Grammar> CompiledToolSet::calls(int max_calls) const {
  return grammars_.get("calls " + std::to_string(max_calls),
                       [&] { return build_call_grammar(format_, tools(), max_calls); });
}

std::shared_ptr<const Grammar> CompiledToolSet::head(const std::string& prefix) const {
  return grammars_.get("head " + prefix, [&] { return build_head_grammar(prefix, format_, tools()); });
}

std::shared_ptr<const Grammar> CompiledToolSet::value(const Property& argument, const std::string& prefix) const {
  return grammars_.get("value " + address(&argument) + " " + prefix,
                       [&] { return build_value_grammar(argument.schema, prefix, format_.arguments); });
}

std::shared_ptr<const Grammar> CompiledToolSet::tail(const ToolSpec& tool, const std::string& prefix,
                                                     OptionalArguments optional, Members members,
                                                     NextCall next) const {
  std::string key = "tail " + address(&tool) + " " + std::to_string(int(optional)) + std::to_string(int(members)) +
                    std::to_string(int(next)) + " " + prefix;
  return grammars_.get(key, [&] {
    std::vector<Property> later =
        optional == OptionalArguments::Follow ? optional_arguments(tool) : std::vector<Property>{};
    return build_tail_grammar(prefix, format_, later, members, next, tool.free_form_arguments.get());
  });
}

std::shared_ptr<const Grammar> CompiledToolSet::reference(const ToolSpec& tool,
                                                          const std::vector<const Property*>& branches,
                                                          OptionalArguments optional, NextCall next,
                                                          const std::string& before) const {
  std::string key = "reference " + address(&tool) + " " + std::to_string(int(optional)) + std::to_string(int(next));
  for (const Property* p : branches) key += " " + address(p);
  key += " " + before;
  return grammars_.get(key, [&] {
    std::vector<Property> arguments;
    for (const Property* p : branches) {
      arguments.push_back(*p);
      arguments.back().required = true;
    }
    if (optional == OptionalArguments::Follow) {
      for (const Property& p : optional_arguments(tool)) arguments.push_back(p);
    }
    return build_tail_grammar(before + format_.call_head(tool.name), format_, arguments, Members::NoneYet, next,
                              tool.free_form_arguments.get());
  });
}

std::shared_ptr<const Skeleton> CompiledToolSet::skeleton(const std::string& head_text,
                                                          const std::vector<const Property*>& arguments) const {
  std::string key;
  for (const Property* p : arguments) key += address(p) + " ";
  return skeletons_.get(key + "| " + head_text, [&] {
    return std::make_shared<const Skeleton>(build_skeleton(model(), head_text, arguments, format_));
  });
}

std::shared_ptr<const CompiledToolSet> CompiledToolSet::compile(std::shared_ptr<const Model> model,
                                                                 std::vector<ToolSpec> tools,
                                                                 const CallFormat* format) {
  const double before = compile_clock_ms();
  auto set = timed([&] {
    CallFormat written = format ? *format : loaded(*model).format;
    auto compiled = std::make_shared<CompiledToolSet>(std::move(model), std::move(tools), std::move(written));
    // What every call of the serial modes and every first SchemaWeaver call needs.
    if (!compiled->tools().empty()) {
      compiled->calls(0);
      if (compiled->format().named) compiled->head(compiled->format().opener);
    }
    if (compiled->format().family != "template") compiled->system_prompt("");
    return compiled;
  });
  set->compile_ms_ = compile_clock_ms() - before;
  return set;
}

std::shared_ptr<const ToolSet> compile_tools(std::shared_ptr<const Model> model, std::vector<ToolSpec> tools) {
  if (!model) throw Error("compile_tools needs a model");
  return CompiledToolSet::compile(std::move(model), std::move(tools));
}

std::shared_ptr<const ToolSet> compile_schema(std::shared_ptr<const Model> model, ToolSpec answer) {
  if (!model) throw Error("compile_schema needs a model");
  const CallFormat format = CallFormat::schema_answer();
  return CompiledToolSet::compile(std::move(model), {std::move(answer)}, &format);
}

// The cache: a list in the order of last use, and an index of it by key.
struct ToolSetCacheState {
  std::shared_ptr<const Model> model;
  size_t capacity;
  std::mutex mutex;
  std::list<std::pair<std::string, std::shared_ptr<const ToolSet>>> recent;  // most recent first
  std::map<std::string, decltype(recent)::iterator> index;
  ToolSetCache::Counts counts;
};

ToolSetCache::ToolSetCache(std::shared_ptr<const Model> model, size_t capacity)
    : state_(std::make_unique<ToolSetCacheState>()) {
  if (!model) throw Error("a tool-set cache needs a model");
  if (capacity == 0) throw Error("a tool-set cache needs room for at least one set");
  state_->model = std::move(model);
  state_->capacity = capacity;
}
ToolSetCache::~ToolSetCache() = default;

std::shared_ptr<const ToolSet> ToolSetCache::get(const std::vector<ToolSpec>& tools) {
  return get(canonical_json(tools), [&] { return compile_tools(state_->model, tools); });
}

std::shared_ptr<const ToolSet> ToolSetCache::get_schema(const ToolSpec& answer) {
  return get(key_prefix(CallFormat::schema_answer()) + canonical_json({answer}),
             [&] { return compile_schema(state_->model, answer); });
}

std::shared_ptr<const ToolSet> ToolSetCache::get(const std::string& key,
                                                const std::function<std::shared_ptr<const ToolSet>()>& compile) {
  ToolSetCacheState& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto found = s.index.find(key);
    if (found != s.index.end()) {
      s.recent.splice(s.recent.begin(), s.recent, found->second);
      s.counts.hits += 1;
      return found->second->second;
    }
  }
  std::shared_ptr<const ToolSet> set = compile();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.counts.misses += 1;
  if (s.index.count(key)) return set;  // another thread compiled it meanwhile
  s.recent.emplace_front(key, set);
  s.index[key] = s.recent.begin();
  if (s.recent.size() > s.capacity) {
    s.index.erase(s.recent.back().first);
    s.recent.pop_back();
  }
  return set;
}

ToolSetCache::Counts ToolSetCache::counts() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Counts c = state_->counts;
  c.size = state_->recent.size();
  return c;
}

}  // namespace sw
