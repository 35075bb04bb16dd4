// One tool call with the C++ API: load a model, compile the tools, ask, print the call.
//   weather MODEL.gguf TOOLS.json "What is the weather like in Paris?"
#include <fstream>
#include <iostream>

#include <schemaweaver/engine.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL.gguf TOOLS.json REQUEST\n";
    return 2;
  }
  try {
    auto model = sw::Model::load({argv[1]});
    std::ifstream tools_file(argv[2]);
    auto tools = sw::compile_tools(model, sw::parse_tools(sw::Json::parse(tools_file)));
    sw::Session session(model);
    sw::CallOptions options;  // SchemaWeaver, greedy, a call required
    options.on_call = [](const sw::CallEvent& e) { std::cerr << "executable after " << e.at_ms << " ms\n"; };
    sw::CallResult result = session.call({{"user", argv[3]}}, *tools, options);
    if (!result.error.empty()) {
      std::cerr << "no valid call: " << result.error << "\n";
      return 1;
    }
    for (const sw::ToolCall& call : result.calls) std::cout << sw::dump_json(call.to_json()) << "\n";
  } catch (const std::exception& e) {  // sw::Error: a bad file, bad JSON, a refused schema
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
