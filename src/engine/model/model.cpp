#include "engine/model/model.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "engine/chat/llama_chat.h"

namespace sw {
namespace {

std::mutex log_mutex;  // guards the three below
std::string last_errors;
LogCallback log_callback;
LogLevel continued_level = LogLevel::Info;  // of the message a GGML_LOG_LEVEL_CONT piece goes on

LogLevel level_of(ggml_log_level level) {
  switch (level) {
    case GGML_LOG_LEVEL_DEBUG: return LogLevel::Debug;
    case GGML_LOG_LEVEL_WARN: return LogLevel::Warn;
    case GGML_LOG_LEVEL_ERROR: return LogLevel::Error;
    case GGML_LOG_LEVEL_CONT: return continued_level;
    default: return LogLevel::Info;
  }
}

// llama.cpp's log: its warnings and errors kept for the messages of load errors, and everything
// handed to the app's callback, if it set one.
void route_log(ggml_log_level ggml_level, const char* text, void*) {
  std::lock_guard<std::mutex> lock(log_mutex);
  const LogLevel level = level_of(ggml_level);
  continued_level = level;
  if (level == LogLevel::Warn || level == LogLevel::Error) {
    last_errors += text;
    if (last_errors.size() > 2000) last_errors.erase(0, last_errors.size() - 2000);
  }
  if (log_callback) log_callback(level, text);
}

std::string token_piece(const llama_vocab* vocab, llama_token token) {
  char buf[256];
  int n = llama_token_to_piece(vocab, token, buf, sizeof buf, 0, true);
  if (n < 0) {
    std::string big(size_t(-n), '\0');
    n = llama_token_to_piece(vocab, token, big.data(), int(big.size()), 0, true);
    return big.substr(0, size_t(std::max(n, 0)));
  }
  return std::string(buf, size_t(n));
}

std::string meta(const llama_model* model, const char* key) {
  char buf[512];
  int n = llama_model_meta_val_str(model, key, buf, sizeof buf);
  return n < 0 ? "" : std::string(buf, size_t(std::min<int>(n, sizeof buf - 1)));
}

void check_readable(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open model file '" + path + "'");
  char magic[4] = {};
  file.read(magic, 4);
  if (file.gcount() != 4 || std::string(magic, 4) != "GGUF")
    throw Error("'" + path + "' is not a GGUF file (bad magic)");
}

// Text that can stand anywhere inside a JSON string and does not end it.
bool is_plain_string(const std::string& piece) {
  if (piece.empty()) return false;
  for (unsigned char c : piece) {
    if (c < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void init_llama_backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(route_log, nullptr);
    llama_backend_init();
  });
}

void set_log_callback(LogCallback callback) {
  init_llama_backend();
  std::lock_guard<std::mutex> lock(log_mutex);
  log_callback = std::move(callback);
}

std::string llama_last_errors() {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::string errors = last_errors;
  while (!errors.empty() && (errors.back() == '\n' || errors.back() == ' ')) errors.pop_back();
  return errors;
}

LoadedModel::~LoadedModel() {
  streaming.reset();  // the reader stops writing into the model's buffers first
  if (model) llama_model_free(model);
}

namespace {

std::vector<llama_token> tokenize_as_llama(const llama_vocab* vocab, const std::string& text, bool add_bos) {
  int n = -llama_tokenize(vocab, text.data(), int(text.size()), nullptr, 0, add_bos, true);
  std::vector<llama_token> tokens(size_t(std::max(n, 0)));
  if (n > 0) llama_tokenize(vocab, text.data(), int(text.size()), tokens.data(), n, add_bos, true);
  return tokens;
}

// A byte no text here holds and no tokenizer merges with its neighbours (a byte-fallback token).
constexpr char kSentinel = '\x01';

}  // namespace

std::vector<llama_token> LoadedModel::tokenize(const std::string& text, bool add_bos) const {
  if (add_bos || !space_prefix || text.empty()) return tokenize_as_llama(vocab, text, add_bos);
  // A SentencePiece tokenizer with a space prefix puts a space before the text it starts with,
  // which a piece of an answer (forced text, a skeleton) does not hold: the text is tokenized
  // after a sentinel that takes that space, and the tokens up to the sentinel are dropped.
  std::vector<llama_token> tokens = tokenize_as_llama(vocab, kSentinel + text, false);
  const auto sentinel = std::find_if(tokens.begin(), tokens.end(),
                                     [&](llama_token t) { return pieces[size_t(t)] == std::string(1, kSentinel); });
  if (sentinel != tokens.end()) {
    std::vector<llama_token> rest(sentinel + 1, tokens.end());
    if (detokenize(rest) == text) return rest;
  }
  return tokenize_as_llama(vocab, text, false);
}

std::string LoadedModel::detokenize(const std::vector<llama_token>& tokens) const {
  std::string text;
  for (llama_token t : tokens) text += pieces.at(size_t(t));
  return text;
}

llama_context_params LoadedModel::context_params() const {
  llama_context_params cp = llama_context_default_params();
  cp.n_threads = cp.n_threads_batch = threads;
  cp.no_perf = true;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return cp;
}

namespace {

// The model's chat template and the call format it gives (ModelParams::call_format overrides).
void read_chat_template(LoadedModel& m) {
  const char* own = llama_model_chat_template(m.model, nullptr);
  const std::string& override = m.params.chat_template;
  // A base model without a template gets its family's built-in one from llama.cpp.
  m.chat_template = !override.empty() ? override
                    : own             ? own
                    : meta(m.model, "general.architecture").rfind("gemma", 0) == 0 ? "gemma"
                                                                                    : "chatml";
  const bool tool_call_token = m.tokenize("<tool_call>", false).size() == 1;
  if (own || !override.empty()) {
    try {
      m.templates = std::make_shared<const llama_chat::Templates>(m.model, override);
      m.reasoning = m.templates->reasoning_block();
    } catch (const std::exception& e) {
      throw Error(std::string("the chat template cannot be read: ") + e.what());
    }
  }
  if (!m.params.call_format.empty()) {
    m.format = CallFormat::by_name(m.params.call_format);
    return;
  }
  if (!m.templates) {
    m.format = CallFormat::detect(m.chat_template, tool_call_token);
    m.format.fallback_reason = "the model has no chat template";
    return;
  }
  llama_chat::CallAnalysis analysis;
  try {
    analysis = m.templates->analyze();
  } catch (const std::exception& e) {
    m.format = CallFormat::detect(m.chat_template, tool_call_token);
    m.format.fallback_reason = std::string("llama.cpp's template analysis failed: ") + e.what();
    return;
  }
  m.format = CallFormat::derive(analysis, *m.templates, m.reasoning, m.chat_template, tool_call_token);
}

}  // namespace

Version version() { return {SW_VERSION, SW_LLAMA_VERSION}; }

std::shared_ptr<Model> Model::load(const ModelParams& params) {
  init_llama_backend();
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    last_errors.clear();
  }
  check_readable(params.path);
  auto m = std::make_shared<LoadedModel>();
  m->params = params;
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = params.vocab_only;
  mp.load_mode = params.mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  mp.use_extra_bufts = params.repack;
  auto started = std::chrono::steady_clock::now();
  if (params.stream && !params.vocab_only) {
    m->streaming = std::make_unique<StreamingLoad>(params.path, mp);
    m->model = m->streaming->model();
  } else {
    m->model = llama_model_load_from_file(params.path.c_str(), mp);
  }
  if (!m->model)
    throw Error("failed to load model '" + params.path + "': " + llama_last_errors());
  m->vocab = llama_model_get_vocab(m->model);
  int n_vocab = llama_vocab_n_tokens(m->vocab);
  m->pieces.reserve(size_t(n_vocab));
  for (llama_token t = 0; t < n_vocab; ++t) m->pieces.push_back(token_piece(m->vocab, t));
  m->plain_string.resize(size_t(n_vocab));
  for (size_t t = 0; t < size_t(n_vocab); ++t)
    m->plain_string[t] = is_plain_string(m->pieces[t]) && !m->is_atomic(llama_token(t));
  m->space_prefix = m->detokenize(tokenize_as_llama(m->vocab, "a", false)) == " a";
  read_chat_template(*m);
  m->threads = params.threads > 0 ? params.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  m->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return m;
}

ModelInfo Model::info() const {
  const LoadedModel& m = loaded(*this);
  ModelInfo info;
  info.path = m.params.path;
  char desc[256];
  llama_model_desc(m.model, desc, sizeof desc);
  info.description = desc;
  info.name = meta(m.model, "general.name");
  info.weight_bytes = m.streaming ? m.streaming->weight_bytes() : llama_model_size(m.model);
  info.parameters = m.streaming ? m.streaming->parameters() : llama_model_n_params(m.model);
  info.vocab_size = m.vocab_size();
  info.context_size = m.params.context_size;
  info.threads = m.threads;
  info.call_format = m.format.name;
  info.call_format_fallback = m.format.fallback_reason;
  info.call_example = m.format.calls_text({{"NAME", Json{{"ARGUMENT", "VALUE"}}}});
  if (!m.reasoning.end.empty()) info.thinking_block = m.reasoning.opener + "REASONING" + m.reasoning.close;
  info.thinking_always_open = m.reasoning.always_open;
  info.llama_version = version().llama_cpp;
  info.system_info = llama_print_system_info();
  info.load_ms = m.load_ms;
  return info;
}

}  // namespace sw
