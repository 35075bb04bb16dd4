// The library's internals that its tests and benchmark programs check, in one place: they
// include this header and the public ones, never a private header by its own path, so what
// they reach into is listed here and nowhere else.
//
//   sw::loaded(model)      the LoadedModel behind a public Model (llama.cpp's handles, tokenizer)
//   Context                a KV cache with sequences and passes counted
//   Pattern                a schema pattern compiled to a linear-time automaton
//   grammars and Matcher   the call grammar of a tool set and its byte matcher
//   decode loop            generate() with its strategies and drafters
//   compiled(tool_set)     the CompiledToolSet behind a public ToolSet
//   skeleton, weave, plan  SchemaWeaver's pieces and the plan that prices them
//   model tools            windows over a text, importance, output probes, type choice under a
//                          budget, the measured time of each weight type
//   MCP messages           what a server sends, read into plain values
#pragma once

#include "engine/constraint/matcher.h"
#include "engine/decode/call_deltas.h"
#include "engine/decode/decoder.h"
#include "engine/decode/drafter.h"
#include "engine/decode/opening.h"
#include "engine/measure/cost_curve.h"
#include "engine/measure/pass_costs.h"
#include "engine/model/context.h"
#include "engine/format/format.h"
#include "engine/model/model.h"
#include "engine/schema/pattern.h"
#include "engine/session/repeats.h"
#include "engine/toolset/call_grammar.h"
#include "engine/toolset/skeleton.h"
#include "engine/toolset/tool_set.h"
#include "engine/weave/plan.h"
#include "engine/weave/weaver.h"
#include "modeltools/allocation.h"
#include "modeltools/importance.h"
#include "modeltools/output_probe.h"
#include "modeltools/text_reader.h"
#include "modeltools/type_costs.h"
#include "protocols/mcp_messages.h"
