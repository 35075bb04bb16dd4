// A conversation rendered by a model's own chat template (llama.cpp's chat library), in this
// library's types: what ChatTemplate::render and a session's prompt both are.
#pragma once

#include <vector>

#include "engine/chat/llama_chat.h"
#include "schemaweaver/chat_template.h"

namespace sw {

// Throws Error when the template fails on these messages (e.g. roles it does not allow).
ChatTemplate::Rendered render_chat(const llama_chat::Templates& templates, const std::vector<Message>& messages,
                                   const std::vector<ToolSpec>& tools, const TemplateOptions& options);

}  // namespace sw
