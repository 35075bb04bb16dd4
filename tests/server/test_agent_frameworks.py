"""The agent frameworks people build on, as clients of `schemaweaver serve`: OpenAI Agents SDK
(OpenAIChatCompletionsModel), LangChain (ChatOpenAI.bind_tools), pydantic-ai (OpenAIChatModel)
and instructor, each the pinned release of the test environment.

What is checked does not depend on the model's skill (SmolLM2-135M, the call forced with
tool_choice required where the framework lets its user force it): the call's id, name and
arguments reach the framework's tool; the tool's result goes back as a tool message answering
that id; a final text answer arrives; a streamed call accumulates to the whole one; a structured
answer validates as the framework's model.

    python test_agent_frameworks.py --cli build/apps/cli/schemaweaver --model SmolLM2.gguf --tools T.json
"""
import sys

import instructor
import openai
import pydantic
from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool,
                    set_tracing_disabled)
from agents.items import MessageOutputItem, ToolCallItem, ToolCallOutputItem
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from server_checks import arguments, check
from serve_harness import running_server  # noqa: E402 (server_checks makes it importable)

PARIS = "What is the weather like in Paris?"
WEATHER_REPORT = "Sunny, 21 degrees"


class Seen:
    """What a framework handed the tool."""

    def __init__(self):
        self.cities = []

    def get_weather(self, city: str) -> str:
        """Get the current weather in a city.

        Args:
            city: City name.
        """
        self.cities.append(city)
        return WEATHER_REPORT


def openai_agents(base):
    """A tool round trip: the forced call runs the tool, its output answers the call's id, and
    the run ends in text (the SDK resets tool_choice after a call, as it does by default)."""
    set_tracing_disabled(True)
    seen = Seen()
    client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0)
    agent = Agent(name="weather", instructions="Answer with the weather tool's help.",
                  tools=[function_tool(seen.get_weather)],
                  model=OpenAIChatCompletionsModel(model="any", openai_client=client),
                  model_settings=ModelSettings(tool_choice="required", max_tokens=64))
    result = Runner.run_sync(agent, PARIS, max_turns=4)
    calls = [item for item in result.new_items if isinstance(item, ToolCallItem)]
    outputs = [item for item in result.new_items if isinstance(item, ToolCallOutputItem)]
    check(len(seen.cities) == 1 and seen.cities[0], f"Agents SDK: the call reached the tool: {seen.cities}")
    check(calls and calls[0].raw_item.name == "get_weather" and calls[0].raw_item.call_id,
          f"Agents SDK: the call has its name and an id: {calls}")
    check(outputs and outputs[0].raw_item["call_id"] == calls[0].raw_item.call_id and outputs[0].output == WEATHER_REPORT,
          f"Agents SDK: the tool's output answers that id: {outputs}")
    check(isinstance(result.final_output, str) and result.final_output.strip()
          and isinstance(result.new_items[-1], MessageOutputItem),
          f"Agents SDK: the run ends in a text answer: {result.final_output!r}")


def langchain(base):
    """bind_tools with the call forced; the ToolMessage answers its id; the next turn's text;
    the streamed call's chunks add up to the whole call."""
    seen = Seen()
    llm = ChatOpenAI(model="any", base_url=base, api_key="none", max_tokens=64, temperature=0, max_retries=0)
    forced = llm.bind_tools([seen.get_weather], tool_choice="required")
    messages = [HumanMessage(PARIS)]
    ai = forced.invoke(messages)
    check(len(ai.tool_calls) == 1 and ai.tool_calls[0]["name"] == "get_weather" and ai.tool_calls[0]["id"],
          f"LangChain: one call with its name and id: {ai.tool_calls}")
    call = ai.tool_calls[0]
    report = seen.get_weather(**call["args"])
    messages += [ai, ToolMessage(report, tool_call_id=call["id"])]
    answer = llm.bind_tools([seen.get_weather], tool_choice="none").invoke(messages)
    check(isinstance(answer.content, str) and answer.content.strip() and not answer.tool_calls,
          f"LangChain: after the tool message, a text answer: {answer.content!r}")
    streamed = None
    for chunk in forced.stream([HumanMessage(PARIS)]):
        streamed = chunk if streamed is None else streamed + chunk
    check(streamed.tool_calls and streamed.tool_calls[0]["name"] == call["name"]
          and streamed.tool_calls[0]["args"] == call["args"],
          f"LangChain: the streamed call accumulates to the whole one: {streamed.tool_calls}")


class Weather(pydantic.BaseModel):
    city: str
    summary: str = pydantic.Field(max_length=80)


def answered(messages):
    return any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)


def pydantic_ai(base):
    """A tool round trip through pydantic-ai (the call forced until the tool has answered, then
    text, by settings per step as pydantic-ai lets an agent vary them), its return part answering
    the call's id; then a structured answer (pydantic-ai's output tool) validated as its type."""
    seen = Seen()
    model = OpenAIChatModel("any", provider=OpenAIProvider(base_url=base, api_key="none"))
    per_step = lambda ctx: {"tool_choice": "none" if answered(ctx.messages) else "required", "max_tokens": 64}
    agent = PydanticAgent(model, tools=[seen.get_weather], model_settings=per_step)
    result = agent.run_sync(PARIS)
    parts = [part for message in result.all_messages() for part in message.parts]
    calls = [p for p in parts if isinstance(p, ToolCallPart) and p.tool_name == "get_weather"]
    returns = [p for p in parts if isinstance(p, ToolReturnPart) and p.tool_name == "get_weather"]
    check(seen.cities and calls and calls[0].tool_call_id, f"pydantic-ai: the call reached the tool with an id: {calls}")
    check(returns and returns[0].tool_call_id == calls[0].tool_call_id,
          f"pydantic-ai: the tool's return answers that id: {returns}")
    check(isinstance(result.output, str) and result.output.strip(), f"pydantic-ai: a text answer: {result.output!r}")
    structured = PydanticAgent(model, output_type=Weather, model_settings={"max_tokens": 96}).run_sync(PARIS)
    check(isinstance(structured.output, Weather), f"pydantic-ai: a structured answer of its output type: {structured.output!r}")


def instructor_modes(base):
    """instructor's TOOLS and JSON_SCHEMA modes: the answer validates as its response model."""
    for mode in (instructor.Mode.TOOLS, instructor.Mode.JSON_SCHEMA):
        client = instructor.from_openai(openai.OpenAI(base_url=base, api_key="none", max_retries=0), mode=mode)
        weather = client.chat.completions.create(model="any", response_model=Weather, max_retries=0, max_tokens=96,
                                                 messages=[{"role": "user", "content": PARIS}])
        check(isinstance(weather, Weather), f"instructor {mode.value}: a validated {weather!r}")


def main():
    args, _ = arguments(model="a GGUF model (SmolLM2-135M)")
    with running_server(args.cli, args.model, "--timeout", 300) as (server, base, _):
        for framework in (openai_agents, langchain, pydantic_ai, instructor_modes):
            framework(base + "/v1")
        check(server.poll() is None, "the server is still running")
    print("all agent framework checks passed")


if __name__ == "__main__":
    sys.exit(main())
