// schemaweaver: fast tool calls from small on-device language models.
#include <fstream>
#include <iostream>

#include "common.h"

namespace cli {

void ModelOptions::add_to(CLI::App& app) {
  app.add_option("-m,--model", params.path, "GGUF model file")->required();
  app.add_option("-c,--ctx", params.context_size, "context size in tokens")->capture_default_str();
  app.add_option("-t,--threads", params.threads, "threads (0: all cores)")->capture_default_str();
  app.add_option("--format", params.call_format, "call format: smollm2, hermes, json (default: detect)");
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw sw::Error("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(file), {});
}

sw::Json read_json_file(const std::string& path) {
  try {
    return sw::Json::parse(read_file(path));
  } catch (const sw::Json::parse_error& e) {
    throw sw::Error("'" + path + "' is not valid JSON: " + e.what());
  }
}

}  // namespace cli

int main(int argc, char** argv) {
  CLI::App app{"schemaweaver: fast tool calls from small language models, on llama.cpp"};
  app.require_subcommand(1);
  cli::add_call_command(app);
  cli::add_bfcl_command(app);
  cli::add_info_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sw::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
