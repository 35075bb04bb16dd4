// MCP's client side: the revision agreed with a server, its tools and their calls, over either
// transport (mcp_transport.h); what the server sends read by the functions of mcp_messages.h.
#include "schemaweaver/mcp.h"

#include <algorithm>
#include <sstream>

#include "protocols/mcp_messages.h"
#include "protocols/mcp_transport.h"

namespace sw {
namespace {

// The stateless revision, and those of the initialize handshake, newest first.
constexpr const char* kCurrentRevision = "2026-07-28";
const std::vector<std::string> kHandshakeRevisions = {"2025-11-25", "2025-06-18"};
constexpr long kUnsupportedVersion = -32022;
constexpr const char* kMeta = "io.modelcontextprotocol/";

// A JSON-RPC error the server answered with.
struct RpcError : Error {
  RpcError(const std::string& what, Json rpc_error) : Error(what), error(std::move(rpc_error)) {}
  Json error;
};

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : separator) + part;
  return text;
}

Json client_info() { return {{"name", "schemaweaver"}, {"version", "0.1.0"}}; }

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    unsigned v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? digits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

const Json* member(const Json& object, const char* key) {
  return object.is_object() && object.contains(key) ? &object[key] : nullptr;
}

}  // namespace

namespace mcp {

Json parse_line(const std::string& line) {
  Json message = Json::parse(line, nullptr, false);
  if (message.is_discarded() || !message.is_object())
    throw Error("it wrote something that is not JSON-RPC: " + line.substr(0, 200));
  return message;
}

std::string error_text(const Json& error) {
  const Json* message = member(error, "message");
  if (message && message->is_string()) return message->get<std::string>();
  return error.dump(-1, ' ', false, Json::error_handler_t::replace);
}

long error_code(const Json& error) {
  const Json* code = member(error, "code");
  return code && code->is_number_integer() ? code->get<long>() : 0;
}

std::string server_name(const Json& result) {
  const Json* meta = member(result, "_meta");
  const Json* info = member(result, "serverInfo");
  if (!info && meta) info = member(*meta, (std::string(kMeta) + "serverInfo").c_str());
  const Json* name = info ? member(*info, "name") : nullptr;
  return name && name->is_string() ? name->get<std::string>() : "";
}

std::vector<std::string> listed_versions(const Json& result_or_error) {
  const Json* data = member(result_or_error, "data");
  const Json* list = member(result_or_error, "supportedVersions");
  if (!list && data) list = member(*data, "supported");
  std::vector<std::string> versions;
  if (list && list->is_array()) {
    for (const Json& v : *list) {
      if (v.is_string()) versions.push_back(v.get<std::string>());
    }
  }
  return versions;
}

ToolsPage tools_page(const Json& result) {
  const Json* tools = member(result, "tools");
  if (!tools || !tools->is_array()) throw Error("it answered tools/list without a tool list");
  ToolsPage page;
  page.tools.assign(tools->begin(), tools->end());
  const Json* cursor = member(result, "nextCursor");
  if (cursor && cursor->is_string()) page.next_cursor = cursor->get<std::string>();
  const Json* ttl = member(result, "ttlMs");
  if (ttl && ttl->is_number() && ttl->get<double>() >= 0 && ttl->get<double>() < 1e15) page.ttl_ms = ttl->get<long long>();
  return page;
}

std::vector<std::pair<std::string, std::string>> header_arguments(const Json& tool) {
  std::vector<std::pair<std::string, std::string>> headers;
  const Json* schema = member(tool, "inputSchema");
  const Json* properties = schema ? member(*schema, "properties") : nullptr;
  if (!properties || !properties->is_object()) return headers;
  for (const auto& [argument, property] : properties->items()) {
    const Json* header = member(property, "x-mcp-header");
    if (!header) continue;
    const std::string where = "the argument '" + argument + "' ";
    if (!header->is_string() || header->get<std::string>().empty() ||
        header->get<std::string>().find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") !=
            std::string::npos)
      throw Error(where + "names no valid header in x-mcp-header");
    const Json* type = member(property, "type");
    const bool primitive = type && type->is_string() &&
                           contains({"string", "number", "integer", "boolean"}, type->get<std::string>());
    if (!primitive) throw Error(where + "is sent as a header (x-mcp-header) but is not a string, number or boolean");
    headers.emplace_back(argument, "Mcp-Param-" + header->get<std::string>());
  }
  return headers;
}

std::string header_value(const Json& value) {
  const std::string text =
      value.is_string() ? value.get<std::string>() : value.dump(-1, ' ', false, Json::error_handler_t::replace);
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; }) &&
                     (text.empty() || (text.front() != ' ' && text.back() != ' ')) && text.rfind("=?base64?", 0) != 0;
  return plain ? text : "=?base64?" + base64(text) + "?=";
}

McpServer::Result tool_result(const Json& result) {
  if (!result.is_object()) throw Error("it answered tools/call with a result that is not an object");
  const Json* type = member(result, "resultType");
  if (type && *type == "input_required")
    throw Error("the tool asks for input (resultType input_required), which the agent cannot give");
  McpServer::Result out;
  out.is_error = result.contains("isError") && result["isError"] == true;
  const Json* content = member(result, "content");
  if (content && content->is_array()) {
    for (const Json& part : *content) {
      auto field = [&](const char* key) {
        const Json* value = member(part, key);
        return value && value->is_string() ? value->get<std::string>() : "";
      };
      std::string text = field("type") == "text" ? field("text") : "[" + (field("type").empty() ? "?" : field("type")) + "]";
      out.text += (out.text.empty() ? "" : "\n") + text;
    }
  }
  if (const Json* structured = member(result, "structuredContent")) out.structured = *structured;
  if (out.text.empty() && !out.structured.is_null())
    out.text = out.structured.dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

}  // namespace mcp

McpConnection mcp_connection(const std::string& where) {
  McpConnection connection;
  if (where.rfind("http://", 0) == 0 || where.rfind("https://", 0) == 0) {
    connection.url = where;
    return connection;
  }
  std::istringstream in(where);
  for (std::string part; in >> part;) connection.command.push_back(part);
  if (connection.command.empty()) throw Error("an MCP server needs a command or a URL");
  return connection;
}

McpServer::McpServer(std::vector<std::string> command, std::chrono::milliseconds timeout)
    : McpServer(McpConnection{std::move(command), "", {}, timeout, "", nullptr}) {}

McpServer::McpServer(McpConnection connection) : connection_(std::move(connection)) {
  if (connection_.command.empty() && connection_.url.empty()) throw Error("an MCP server needs a command or a URL");
  where_ = connection_.url.empty() ? "'" + joined(connection_.command, " ") + "'" : connection_.url;
  const std::string& pinned = connection_.revision;
  if (!pinned.empty() && pinned != kCurrentRevision && !contains(kHandshakeRevisions, pinned))
    throw Error("MCP revision '" + pinned + "': this client speaks " + kCurrentRevision + ", " +
                joined(kHandshakeRevisions, ", "));
  try {
    transport_ = connection_.url.empty() ? mcp::stdio_transport(connection_.command, connection_.timeout)
                                         : mcp::http_transport(connection_.url, connection_.headers, connection_.timeout);
    connect();
    list_tools();
  } catch (const Error& e) {
    transport_.reset();
    throw Error("the MCP server " + where_ + ": " + e.what());
  }
  if (name_.empty()) name_ = connection_.url.empty() ? connection_.command.front() : connection_.url;
}

McpServer::~McpServer() {
  try {
    if (transport_) transport_->close();
  } catch (const std::exception&) {  // a session the server forgot ends all the same
  }
}

bool McpServer::modern() const { return revision_ == kCurrentRevision; }

void McpServer::log(const std::string& line) const {
  if (connection_.log) connection_.log("MCP " + where_ + ": " + line);
}

void McpServer::connect() {
  const std::string& pinned = connection_.revision;
  if (pinned.empty() || pinned == kCurrentRevision) {
    if (discover()) return;
    if (pinned == kCurrentRevision) throw Error(std::string("it does not speak revision ") + kCurrentRevision);
  }
  initialize(pinned.empty() ? kHandshakeRevisions.front() : pinned);
}

bool McpServer::discover() {
  revision_ = kCurrentRevision;
  transport_->speak(revision_, true);
  std::string why;
  try {
    Json result = request("server/discover", Json::object());
    if (contains(mcp::listed_versions(result), kCurrentRevision)) {
      name_ = mcp::server_name(result);
      log(std::string("revision ") + kCurrentRevision + " (server/discover)");
      return true;
    }
    why = "its server/discover lists no revision of ours";
  } catch (const RpcError& e) {
    const std::vector<std::string> versions = mcp::listed_versions(e.error);
    const bool handshake = std::any_of(versions.begin(), versions.end(),
                                       [](const std::string& v) { return contains(kHandshakeRevisions, v); });
    if (mcp::error_code(e.error) == kUnsupportedVersion && !versions.empty() && !handshake)
      throw Error("it speaks only revision(s) " + joined(versions, ", ") + ", none of ours");
    why = e.what();
  } catch (const mcp::HttpStatusError& e) {
    if (e.status != 400 && e.status != 404 && e.status != 405) throw;
    why = e.what();
  }
  log(std::string("not revision ") + kCurrentRevision + " (" + why + "): the initialize handshake");
  revision_.clear();
  transport_->speak("", false);
  return false;
}

void McpServer::initialize(const std::string& offered) {
  Json result = request("initialize", {{"protocolVersion", offered}, {"capabilities", Json::object()}, {"clientInfo", client_info()}});
  const Json* version = member(result, "protocolVersion");
  const std::string agreed = version && version->is_string() ? version->get<std::string>() : "";
  if (!contains(kHandshakeRevisions, agreed))
    throw Error("it answered initialize with revision '" + agreed + "', which this client does not speak (" +
                kCurrentRevision + ", " + joined(kHandshakeRevisions, ", ") + ")");
  revision_ = agreed;
  transport_->speak(agreed, false);
  name_ = mcp::server_name(result);
  // Over HTTP a session's notifications that no request asked for (a changed list of tools) come
  // on a stream of their own, which this client does not hold open: the list is read again
  // before each turn instead (a request of a few ms on loopback; the SDK's servers send the
  // notification without declaring listChanged).
  relist_each_turn_ = !connection_.url.empty();
  transport_->send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  log("revision " + agreed + " (initialize)" + (relist_each_turn_ ? "; its tools listed again before each turn" : ""));
}

Json McpServer::request(const std::string& method, Json params, mcp::Headers headers) {
  if (modern()) {
    params["_meta"][std::string(kMeta) + "protocolVersion"] = revision_;
    params["_meta"][std::string(kMeta) + "clientCapabilities"] = Json::object();
    params["_meta"][std::string(kMeta) + "clientInfo"] = client_info();
    headers.emplace_back("Mcp-Method", method);
  }
  const long id = next_id_++;
  Json answer;
  auto take = [&](const Json& message) {
    if (message.contains("method")) {
      on_server_message(message);
      return false;
    }
    // An error sent with an HTTP error status may carry no id.
    const bool ours = message.contains("id") ? message["id"] == id : message.contains("error");
    if (ours) answer = message;
    return ours;
  };
  const Json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  try {
    transport_->exchange(message, headers, take, std::chrono::steady_clock::now() + connection_.timeout);
  } catch (const mcp::SessionExpired&) {
    if (method == "initialize") throw;
    log("the session expired: a new one");
    const std::string revision = revision_;
    transport_->speak("", false);
    revision_.clear();
    initialize(revision);
    answer = Json();
    transport_->exchange(message, headers, take, std::chrono::steady_clock::now() + connection_.timeout);
  }
  if (answer.contains("error")) throw RpcError(method + " failed: " + mcp::error_text(answer["error"]), answer["error"]);
  if (!answer.contains("result")) throw Error("it answered " + method + " without a result");
  return answer["result"];
}

void McpServer::on_server_message(const Json& message) {
  if (message.contains("id")) {  // a request: ping is answered, anything else refused
    Json reply = {{"jsonrpc", "2.0"}, {"id", message["id"]}};
    if (message["method"] == "ping") reply["result"] = Json::object();
    else reply["error"] = {{"code", -32601}, {"message", "method not supported by this client"}};
    transport_->send(reply);
  } else if (message["method"] == "notifications/tools/list_changed") {
    tools_changed_ = true;
  }
}

void McpServer::list_tools() {
  std::vector<ToolSpec> listed;
  std::map<std::string, ToolExtras> extras;
  long long ttl_ms = -1;
  Json params = Json::object();
  while (true) {  // tools/list is paginated
    mcp::ToolsPage page = mcp::tools_page(request("tools/list", params));
    if (page.ttl_ms >= 0) ttl_ms = ttl_ms < 0 ? page.ttl_ms : std::min(ttl_ms, page.ttl_ms);
    for (const Json& definition : page.tools) {
      try {
        ToolSpec tool = parse_tools(definition).front();
        if (extras.count(tool.name)) throw Error("a second tool named '" + tool.name + "'");
        ToolExtras& extra = extras[tool.name];
        if (modern()) extra.header_args = mcp::header_arguments(definition);
        const Json* output = member(definition, "outputSchema");
        if (output && output->is_object()) extra.output = std::make_shared<const ToolSpec>(
            parse_tools(Json{{"name", tool.name}, {"inputSchema", *output}}).front());
        listed.push_back(std::move(tool));
      } catch (const Error& e) {
        log(std::string("a tool left out: ") + e.what());
      }
    }
    if (page.next_cursor.empty()) break;
    params = {{"cursor", page.next_cursor}};
  }
  tools_ = std::move(listed);
  extras_ = std::move(extras);
  tools_changed_ = false;
  tools_expire_ = ttl_ms < 0 ? std::chrono::steady_clock::time_point::max()
                             : std::chrono::steady_clock::now() + std::chrono::milliseconds(ttl_ms);
}

std::vector<ToolSpec> McpServer::tools() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tools_;
}

bool McpServer::refresh_tools() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tools_changed_ && !relist_each_turn_ && std::chrono::steady_clock::now() < tools_expire_) return false;
  try {
    list_tools();
  } catch (const Error& e) {
    throw Error("the MCP server " + where_ + " failed to list its tools again: " + e.what());
  }
  log("its tools listed again");
  return true;
}

McpServer::Result McpServer::call(const ToolCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  mcp::Headers headers;
  const auto extra = extras_.find(call.name);
  if (modern()) {
    headers.emplace_back("Mcp-Name", call.name);
    for (const auto& [argument, header] : extra == extras_.end() ? decltype(ToolExtras::header_args){} : extra->second.header_args) {
      if (call.arguments.contains(argument)) headers.emplace_back(header, mcp::header_value(call.arguments[argument]));
    }
  }
  Result result;
  try {
    result = mcp::tool_result(request("tools/call", {{"name", call.name}, {"arguments", call.arguments}}, headers));
  } catch (const Error& e) {
    throw Error("the MCP server " + where_ + " failed on tools/call " + call.name + ": " + e.what());
  }
  // A structured result that breaks the tool's own outputSchema is not the result it promised.
  if (!result.is_error && extra != extras_.end() && extra->second.output && !result.structured.is_null()) {
    const std::string why = schema_violation({*extra->second.output}, {call.name, result.structured});
    if (!why.empty()) {
      result.is_error = true;
      result.text = "the tool's result does not fit its outputSchema: " + why;
    }
  }
  return result;
}

}  // namespace sw
