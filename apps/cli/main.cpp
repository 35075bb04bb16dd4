// schemaweaver: fast tool calls from small on-device language models.
#include <iostream>

#include "common.h"

int main(int argc, char** argv) {
  CLI::App app{"schemaweaver: fast tool calls from small language models, on llama.cpp"};
  const sw::Version v = sw::version();
  app.set_version_flag("--version", "schemaweaver " + v.schemaweaver + " (" + v.llama_cpp + ")");
  app.require_subcommand(1);
  cli::route_llama_log();
  cli::add_call_command(app);
  cli::add_bfcl_command(app);
  cli::add_bfcl_cases_command(app);
  cli::add_costs_command(app);
  cli::add_info_command(app);
  cli::add_serve_command(app);
  cli::add_agent_command(app);
  cli::add_pack_command(app);
  cli::add_parse_command(app);
  cli::add_quality_command(app);
  cli::add_shape_command(app);
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
