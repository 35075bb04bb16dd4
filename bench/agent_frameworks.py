#!/usr/bin/env python3
"""The agent frameworks people build on, as clients of `schemaweaver serve` and llama-server:
20 small agent tasks run through each of the OpenAI Agents SDK, LangChain, pydantic-ai and
instructor (the pinned releases of the test environment), each framework used as its
documentation shows, with its defaults (tool_choice auto).

    $SCHEMAWEAVER_CACHE/venv/bin/python bench/agent_frameworks.py --model M.gguf
        [--frameworks agents-sdk,langchain,pydantic-ai,instructor] [--servers schemaweaver,llama-server]
        [--out DIR]

--servers names settings: schemaweaver, llama-server, and schemaweaver/answer-repeats (served with
--repeated-calls answer: a turn whose calls all repeat answered ones is answered in text).

The tasks: 6 tool round trips (one tool, or the right one of three), 4 of two tools in sequence
(the second needs the first's result), 4 parallel pairs, 3 structured answers (a pydantic type,
after a tool) and 3 streamed runs. A task is complete when every expected call reached the tool
with the expected arguments and the final answer carries the tool's facts (the structured ones
validated as their type, with the expected values). Greedy, max_tokens 256, at most 8 model
requests a task. instructor has no agent loop of its own: its loop asks, each step, for a list
of steps (the tools' argument models and an answer model, instructor's Iterable of a Union),
streamed with create_iterable in the streamed tasks. JSON lines per run and a Markdown summary
under --out; a rerun skips the runs already there.
"""
import asyncio
import functools
import inspect
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Union

import instructor
import openai
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import log, machine, resumed_run, servers_parser, table  # noqa: E402
from peers import start_server  # noqa: E402

SYSTEM = "You are a helpful assistant. Use the tools to look things up, then answer the user."
MAX_TOKENS = 256
MAX_REQUESTS = 8

# ------------------------------------------------------------------ the tools, their results known

WEATHER = {"paris": "sunny, 21 °C", "tokyo": "rain, 14 °C", "cairo": "clear, 33 °C", "oslo": "cloudy, 6 °C",
           "lisbon": "windy, 18 °C"}
PRICES = {"NVDA": 131.25, "AAPL": 187.4}
TIMES = {"tokyo": "18:40", "london": "09:40", "new york": "04:40"}
USERS = {"alice smith": "u-4821", "bob jones": "u-1177"}
ORDERS = {"u-4821": "order 7731: shipped on 3 December", "u-1177": "order 5120: in transit, arriving 9 December"}
AIRPORTS = {"LIS": "Lisbon", "NRT": "Tokyo"}
EUR_PER_USD = 0.92


def lookup(table_, key):
    """A table's entry for a key written loosely ("Paris, France", "paris")."""
    key = str(key).lower().split(",")[0].strip()
    return next((v for k, v in table_.items() if k.lower() == key), None)


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return lookup(WEATHER, city) or f"no weather data for {city}"


def get_stock_price(symbol: str) -> str:
    """Get the current price of a share.

    Args:
        symbol: The stock's ticker symbol, e.g. AAPL.
    """
    price = lookup(PRICES, symbol)
    return f"{symbol.upper()} trades at {price} USD" if price else f"unknown symbol {symbol}"


def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount of money between US dollars (USD) and euros (EUR).

    Args:
        amount: The amount to convert.
        from_currency: The currency code of the amount, USD or EUR.
        to_currency: The currency code to convert to, USD or EUR.
    """
    rates = {("USD", "EUR"): EUR_PER_USD, ("EUR", "USD"): 1 / EUR_PER_USD}
    rate = rates.get((from_currency.upper(), to_currency.upper()))
    if rate is None:
        return f"cannot convert {from_currency} to {to_currency}"
    return f"{amount} {from_currency.upper()} = {round(float(amount) * rate, 2)} {to_currency.upper()}"


def get_time(city: str) -> str:
    """Get the local time in a city.

    Args:
        city: The city's name, e.g. Tokyo.
    """
    return lookup(TIMES, city) or f"no time zone known for {city}"


def find_user(name: str) -> str:
    """Find a customer's user id by their full name.

    Args:
        name: The customer's full name.
    """
    found = lookup(USERS, name)
    return f"user id {found}" if found else f"no user named {name}"


def get_orders(user_id: str) -> str:
    """Get the latest order of a customer.

    Args:
        user_id: The customer's user id, e.g. u-1234.
    """
    return ORDERS.get(user_id.strip(), f"no orders for {user_id}")


def airport_city(code: str) -> str:
    """Get the city an airport serves.

    Args:
        code: The airport's three-letter IATA code.
    """
    return lookup(AIRPORTS, code) or f"unknown airport {code}"


class WeatherReport(pydantic.BaseModel):
    city: str
    temperature_c: float
    conditions: str


class OrderStatus(pydantic.BaseModel):
    customer: str
    order_number: int
    status: str


class StockQuote(pydantic.BaseModel):
    symbol: str
    price_usd: float


# ------------------------------------------------------------------ the tasks

@dataclass
class Task:
    id: str
    kind: str
    prompt: str
    tools: list
    calls: list  # (tool, {argument: expected}) each made at least once
    facts: list = field(default_factory=list)  # in the final text answer (case aside)
    output: Optional[type] = None  # a structured answer of this type
    expected: dict = field(default_factory=dict)  # its fields' values
    stream: bool = False


CHOICE = [get_weather, get_stock_price, get_time]
TASKS = [
    Task(id="weather", kind="round trip", prompt="What is the weather like in Paris?", tools=[get_weather],
         calls=[("get_weather", {"city": "paris"})], facts=["21"]),
    Task(id="share-price", kind="round trip", prompt="How much does one NVDA share cost right now?",
         tools=[get_stock_price], calls=[("get_stock_price", {"symbol": "nvda"})], facts=["131.25"]),
    Task(id="convert", kind="round trip", prompt="Convert 250 US dollars to euros.", tools=[convert_currency],
         calls=[("convert_currency", {"amount": 250, "from_currency": "usd", "to_currency": "eur"})], facts=["230"]),
    Task(id="time", kind="round trip", prompt="What time is it in Tokyo?", tools=[get_time],
         calls=[("get_time", {"city": "tokyo"})], facts=["18:40"]),
    Task(id="choose-weather", kind="round trip", prompt="What's the weather in Cairo today?", tools=CHOICE,
         calls=[("get_weather", {"city": "cairo"})], facts=["33"]),
    Task(id="choose-price", kind="round trip", prompt="What's Apple's share price? Its ticker is AAPL.", tools=CHOICE,
         calls=[("get_stock_price", {"symbol": "aapl"})], facts=["187.4"]),
    Task(id="order-status", kind="sequence", prompt="What is the status of Alice Smith's latest order?",
         tools=[find_user, get_orders], calls=[("find_user", {"name": "alice smith"}), ("get_orders", {"user_id": "u-4821"})],
         facts=["shipped"]),
    Task(id="order-arrival", kind="sequence", prompt="When will Bob Jones's latest order arrive?",
         tools=[find_user, get_orders], calls=[("find_user", {"name": "bob jones"}), ("get_orders", {"user_id": "u-1177"})],
         facts=["9 december"]),
    Task(id="airport-weather", kind="sequence", prompt="What's the weather in the city of the airport LIS?",
         tools=[airport_city, get_weather], calls=[("airport_city", {"code": "lis"}), ("get_weather", {"city": "lisbon"})],
         facts=["18"]),
    Task(id="price-in-euros", kind="sequence", prompt="What does one NVDA share cost in euros?",
         tools=[get_stock_price, convert_currency],
         calls=[("get_stock_price", {"symbol": "nvda"}),
                ("convert_currency", {"amount": 131.25, "from_currency": "usd", "to_currency": "eur"})],
         facts=["120.75"]),
    Task(id="two-cities", kind="parallel", prompt="What's the weather in Paris and in Tokyo?", tools=[get_weather],
         calls=[("get_weather", {"city": "paris"}), ("get_weather", {"city": "tokyo"})], facts=["21", "14"]),
    Task(id="two-shares", kind="parallel", prompt="Get the share prices of AAPL and NVDA.", tools=[get_stock_price],
         calls=[("get_stock_price", {"symbol": "aapl"}), ("get_stock_price", {"symbol": "nvda"})],
         facts=["187.4", "131.25"]),
    Task(id="two-clocks", kind="parallel", prompt="What time is it in London and in New York?", tools=[get_time],
         calls=[("get_time", {"city": "london"}), ("get_time", {"city": "new york"})], facts=["9:40", "4:40"]),
    Task(id="weather-and-time", kind="parallel", prompt="What's the weather in Oslo, and what time is it in Tokyo?",
         tools=[get_weather, get_time], calls=[("get_weather", {"city": "oslo"}), ("get_time", {"city": "tokyo"})],
         facts=["cloudy", "18:40"]),
    Task(id="weather-report", kind="structured", prompt="Report the current weather in Paris.", tools=[get_weather],
         calls=[("get_weather", {"city": "paris"})], output=WeatherReport,
         expected={"city": "paris", "temperature_c": 21}),
    Task(id="order-report", kind="structured", prompt="Look up the status of Alice Smith's latest order.",
         tools=[find_user, get_orders], calls=[("find_user", {"name": "alice smith"}), ("get_orders", {"user_id": "u-4821"})],
         output=OrderStatus, expected={"order_number": 7731, "status": "shipped"}),
    Task(id="share-quote", kind="structured", prompt="Give me a quote for NVDA shares.", tools=[get_stock_price],
         calls=[("get_stock_price", {"symbol": "nvda"})], output=StockQuote, expected={"price_usd": 131.25}),
    Task(id="weather-streamed", kind="streamed", prompt="What is the weather like in Tokyo?", tools=[get_weather],
         calls=[("get_weather", {"city": "tokyo"})], facts=["14"], stream=True),
    Task(id="order-streamed", kind="streamed", prompt="What is the status of Alice Smith's latest order?",
         tools=[find_user, get_orders], calls=[("find_user", {"name": "alice smith"}), ("get_orders", {"user_id": "u-4821"})],
         facts=["shipped"], stream=True),
    Task(id="two-cities-streamed", kind="streamed", prompt="What's the weather in Cairo and in Lisbon?",
         tools=[get_weather], calls=[("get_weather", {"city": "cairo"}), ("get_weather", {"city": "lisbon"})],
         facts=["33", "18"], stream=True),
]
KINDS = ["round trip", "sequence", "parallel", "structured", "streamed"]


def matches(expected, actual):
    if isinstance(expected, (int, float)):
        try:
            return abs(float(actual) - expected) < 1e-6
        except (TypeError, ValueError):
            return False
    return expected in str(actual).lower()


def grade(task, calls, answer):
    """'' when the task is complete, else what is missing."""
    for name, arguments in task.calls:
        if not any(n == name and all(matches(v, a.get(k)) for k, v in arguments.items()) for n, a in calls):
            return f"no call {name}({arguments})"
    if task.output:
        if not isinstance(answer, task.output):
            return f"no {task.output.__name__}: {str(answer)[:120]!r}"
        wrong = [k for k, v in task.expected.items() if not matches(v, getattr(answer, k))]
        return f"wrong {', '.join(wrong)}: {answer!r}" if wrong else ""
    text = str(answer or "").lower()
    missing = [fact for fact in task.facts if fact not in text]
    return f"answer lacks {missing}: {text[:160]!r}" if missing else ""


def recorded(tools, calls):
    """The task's tools, each noting its call (name, arguments) before it answers; signatures and
    docstrings kept for the frameworks to read."""
    def record(fn):
        @functools.wraps(fn)
        def tool(*args, **kwargs):
            calls.append((fn.__name__, dict(inspect.signature(fn).bind(*args, **kwargs).arguments)))
            return fn(*args, **kwargs)
        return tool
    return [record(fn) for fn in tools]


# ------------------------------------------------------------------ the frameworks

def agents_sdk(base, task, tools):
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0, timeout=600)
    agent = Agent(name="assistant", instructions=SYSTEM, tools=[function_tool(t) for t in tools],
                  model=OpenAIChatCompletionsModel(model="any", openai_client=client), output_type=task.output,
                  model_settings=ModelSettings(temperature=0, max_tokens=MAX_TOKENS))
    if not task.stream:
        return Runner.run_sync(agent, task.prompt, max_turns=MAX_REQUESTS).final_output

    async def streamed():
        result = Runner.run_streamed(agent, task.prompt, max_turns=MAX_REQUESTS)
        async for _ in result.stream_events():
            pass
        return result.final_output
    return asyncio.run(streamed())


def langchain(base, task, tools):
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(model="any", base_url=base, api_key="none", temperature=0, max_tokens=MAX_TOKENS, max_retries=0,
                     timeout=600)
    bound = llm.bind_tools(tools, **({"response_format": task.output} if task.output else {}))
    by_name = {t.__name__: t for t in tools}
    messages = [SystemMessage(SYSTEM), HumanMessage(task.prompt)]
    for _ in range(MAX_REQUESTS):
        if task.stream:
            ai = None
            for chunk in bound.stream(messages):
                ai = chunk if ai is None else ai + chunk
        else:
            ai = bound.invoke(messages)
        messages.append(ai)
        if not ai.tool_calls:
            return task.output.model_validate_json(ai.content) if task.output else ai.content
        for call in ai.tool_calls:
            result = by_name[call["name"]](**call["args"]) if call["name"] in by_name else f"no tool {call['name']}"
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
    raise RuntimeError(f"no answer after {MAX_REQUESTS} requests")


def pydantic_ai(base, task, tools):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits
    model = OpenAIChatModel("any", provider=OpenAIProvider(base_url=base, api_key="none"))
    agent = Agent(model, instructions=SYSTEM, tools=tools, output_type=task.output or str,
                  model_settings={"temperature": 0, "max_tokens": MAX_TOKENS})
    limits = UsageLimits(request_limit=MAX_REQUESTS)
    if not task.stream:
        return agent.run_sync(task.prompt, usage_limits=limits).output
    return agent.run_stream_sync(task.prompt, usage_limits=limits).get_output()


class Answer(pydantic.BaseModel):
    """The final answer to the user, once the tools' results are in."""
    text: str


def argument_model(fn):
    """A tool's arguments as a pydantic model named after it (its docstring its description)."""
    fields = {name: (p.annotation, ...) for name, p in inspect.signature(fn).parameters.items()}
    return pydantic.create_model(fn.__name__, __doc__=fn.__doc__, **fields)


def instructor_loop(base, task, tools):
    client = instructor.from_openai(openai.OpenAI(base_url=base, api_key="none", max_retries=0, timeout=600),
                                    mode=instructor.Mode.TOOLS)
    by_name = {t.__name__: t for t in tools}
    final = task.output or Answer
    kinds = Union[tuple(argument_model(t) for t in tools) + (final,)]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.prompt}]
    for _ in range(MAX_REQUESTS):
        ask = dict(model="any", messages=messages, temperature=0, max_tokens=MAX_TOKENS, max_retries=0)
        steps = list(client.chat.completions.create_iterable(response_model=kinds, **ask) if task.stream
                     else client.chat.completions.create(response_model=Iterable[kinds], **ask))
        answers = [s for s in steps if isinstance(s, final)]
        if answers:
            return answers[0].text if final is Answer else answers[0]
        results = [f"{type(s).__name__}({s.model_dump_json()}) -> {by_name[type(s).__name__](**s.model_dump())}"
                   for s in steps]
        messages += [{"role": "assistant", "content": json.dumps([{type(s).__name__: s.model_dump()} for s in steps])},
                     {"role": "user", "content": "Results:\n" + "\n".join(results)}]
    raise RuntimeError(f"no answer after {MAX_REQUESTS} requests")


FRAMEWORKS = {"agents-sdk": agents_sdk, "langchain": langchain, "pydantic-ai": pydantic_ai,
              "instructor": instructor_loop}

# A setting of a server, as --servers names it: the server, and its flags.
SETTINGS = {"schemaweaver": ("schemaweaver", []), "llama-server": ("llama-server", []),
            "schemaweaver/answer-repeats": ("schemaweaver", ["--repeated-calls", "answer"])}


# ------------------------------------------------------------------ the run and its report

def run(base, framework, task):
    calls = []
    started = time.perf_counter()
    try:
        answer = FRAMEWORKS[framework](base, task, recorded(task.tools, calls))
        why = grade(task, calls, answer)
    except Exception as e:  # the framework gave up: its error is the verdict
        answer, why = None, f"{type(e).__name__}: {str(e)[:300]}"
        if not isinstance(e, (openai.APIError, RuntimeError)):
            log("".join(traceback.format_exception(e)[-3:]))
    return {"complete": not why, "why": why, "calls": calls, "s": time.perf_counter() - started,
            "answer": answer.model_dump() if isinstance(answer, pydantic.BaseModel) else answer}


def summarize(lines, frameworks):
    header = ["framework", "server", "complete"] + KINDS + ["s / task"]
    rows = []
    kinds = {t.id: t.kind for t in TASKS}
    for framework in frameworks:
        for server in dict.fromkeys(line["server"] for line in lines):
            done = [line for line in lines if line["framework"] == framework and line["server"] == server]
            if not done:
                continue
            by_kind = [f"{sum(l['complete'] for l in done if kinds[l['task']] == k)}/"
                       f"{sum(kinds[l['task']] == k for l in done)}" for k in KINDS]
            rows.append([framework, server, f"{sum(l['complete'] for l in done)}/{len(done)}"] + by_kind +
                        [f"{sum(l['s'] for l in done) / len(done):.1f}"])
    return table(header, rows)


def main():
    parser = servers_parser(__doc__.split("\n\n")[0], "unused", 8192)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--tasks", default="", help="task ids (all by default)")
    args = parser.parse_args()
    model = Path(args.model)
    out, lines_path, lines = resumed_run(args.out, "agent-frameworks", model, "runs.jsonl")
    done = {(line["server"], line["framework"], line["task"]) for line in lines}
    frameworks = args.frameworks.split(",")
    tasks = [t for t in TASKS if not args.tasks or t.id in args.tasks.split(",")]
    for server_name in args.servers.split(","):
        todo = [(f, t) for f in frameworks for t in tasks if (server_name, f, t.id) not in done]
        if not todo:
            continue
        kind, flags = SETTINGS[server_name]
        server = start_server(kind, model, args, out / f"{server_name.replace('/', '-')}.log", flags=flags)
        try:
            for framework, task in todo:
                line = {"server": server_name, "framework": framework, "task": task.id,
                        **run(f"http://127.0.0.1:{server.port}/v1", framework, task)}
                lines.append(line)
                with lines_path.open("a") as f:
                    f.write(json.dumps(line, default=str) + "\n")
                log(f"{server_name} {framework} {task.id}: {'complete' if line['complete'] else line['why']} "
                    f"({line['s']:.0f} s)")
        finally:
            server.stop()
    markdown = summarize(lines, frameworks)
    (out / "summary.md").write_text(f"Agent frameworks, {model.name}, {len(TASKS)} tasks; {machine()['cpu']}, "
                                    f"{args.threads} threads\n\n{markdown}\n")
    print(markdown)


if __name__ == "__main__":
    main()
