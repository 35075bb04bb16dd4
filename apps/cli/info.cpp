#include <iostream>

#include "common.h"

namespace cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "show the model, its call format, llama.cpp version, threads");
  auto options = std::make_shared<ModelOptions>();
  options->add_to(*cmd);
  cmd->callback([options] {
    sw::ModelInfo info = sw::Model::load(options->params)->info();
    std::cout << "model:        " << info.path << "\n"
              << "name:         " << info.name << "\n"
              << "description:  " << info.description << "\n"
              << "parameters:   " << info.parameters << "\n"
              << "weight bytes: " << info.weight_bytes << "\n"
              << "vocabulary:   " << info.vocab_size << " tokens\n"
              << "call format:  " << info.call_format
              << (info.call_format_fallback.empty() ? "" : " (the library's instruction: " + info.call_format_fallback + ")")
              << "\n"
              << "a call:       " << info.call_example << "\n"
              << "thinking:     " << (info.thinking_block.empty() ? "none" : sw::Json(info.thinking_block).dump())
              << (info.thinking_always_open ? " (always open: thinking off closes it at once)" : "") << "\n"
              << "context:      " << info.context_size << " tokens\n"
              << "threads:      " << info.threads << "\n"
              << "load:         " << info.load_ms << " ms\n"
              << "llama.cpp:    " << info.llama_version << "\n"
              << "system:       " << info.system_info << "\n";
  });
}

}  // namespace cli
