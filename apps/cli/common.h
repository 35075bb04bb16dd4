// Options and helpers shared by the CLI's subcommands.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "schemaweaver/engine.h"

namespace cli {

// Model options every model-using subcommand takes.
struct ModelOptions {
  sw::ModelParams params;
  void add_to(CLI::App& app);
};

std::string read_file(const std::string& path);   // throws sw::Error naming the path
sw::Json read_json_file(const std::string& path); // throws sw::Error with the parse position

void add_call_command(CLI::App& app);
void add_bfcl_command(CLI::App& app);
void add_info_command(CLI::App& app);

}  // namespace cli
