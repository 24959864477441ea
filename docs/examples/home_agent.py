"""A small agent with four call sites, for docs/capture.md's walk from "my agent runs on GPT-x" to a routing.

    python docs/examples/home_agent.py --base-url http://127.0.0.1:8765/v1 --model gpt-x
    python docs/examples/home_agent.py --client ollama --base-url http://127.0.0.1:8765 --model qwen3:8b

Each user turn goes to the router (one word: weather, timer or chat); a weather turn goes to the weather
agent, which calls get_weather and then words the answer (a second call site, weather_answer); a timer
turn goes to the timer site, which answers JSON; a chat turn gets a canned reply. Every request names its
call site in the X-Agentfloor-Site header, which the capture proxy reads and drops (an upstream reached
directly ignores it). Written with the official `openai` client (or `ollama`), as a deployed agent is.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

ROUTER = ("You are the front desk of a home assistant. Classify the user's message as weather, timer or chat. "
          "Answer with that one word only.")
WEATHER = ("You are the weather agent of a home assistant. Call get_weather for the city the user asks about. "
           "Do not answer from memory.")
WEATHER_ANSWER = "You are the weather agent of a home assistant. Answer the user in one short sentence from the report."
TIMER = ('You set kitchen timers. Reply with JSON only, no other text: {"minutes": <integer>, "label": "<what the '
         'timer is for, one or two words>"}.')
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "the city name"}},
                   "required": ["city"]}}}]
FORECAST = {"paris": "sunny, 21 C", "oslo": "snow, -3 C", "lima": "fog, 16 C", "cairo": "hot and dry, 35 C",
            "tokyo": "light rain, 18 C", "denver": "windy, 12 C"}
TURNS = ["What's the weather in Paris?", "Set a timer for 10 minutes for the pasta.", "Tell me a joke.",
         "Is it raining in Tokyo right now?", "I need a 25 minute timer for the laundry.", "How are you today?",
         "Weather in Oslo please.", "Timer: 3 minutes, eggs.", "What's the weather in Paris?",
         "Thanks, that's all.", "How hot is it in Cairo?", "Set a 45 minute timer for the roast."]

#: (site, system prompt, messages, tools) -> (text, tool calls as [{"id", "name", "arguments": dict}])
Call = Callable[[str, str, list[dict[str, Any]], list[dict[str, Any]]], tuple[str, list[dict[str, Any]]]]


def openai_call(base_url: str, model: str, api_key: str) -> Call:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=600,
                           http_client=openai.DefaultHttpxClient(trust_env=False))

    def call(site: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        msgs = [{"role": "system", "content": system}, *messages]
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        reply = client.chat.completions.create(model=model, messages=msgs, temperature=0, max_tokens=128,
                                               extra_headers={"X-Agentfloor-Site": site}, **extra)  # type: ignore[arg-type]
        msg = reply.choices[0].message
        calls = []
        for c in msg.tool_calls or []:
            try:
                args = json.loads(c.function.arguments or "{}")  # type: ignore[union-attr]
            except ValueError:
                args = {}
            calls.append({"id": c.id, "name": c.function.name, "arguments": args})  # type: ignore[union-attr]
        return msg.content or "", calls
    return call


def ollama_call(host: str, model: str) -> Call:
    import ollama

    clients: dict[str, Any] = {}

    def call(site: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        if site not in clients:  # the ollama client takes headers per client, not per request
            clients[site] = ollama.Client(host=host, headers={"X-Agentfloor-Site": site}, trust_env=False)
        msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
        names: dict[str, str] = {}
        for m in messages:  # Ollama's shape: arguments as objects, a tool result named by its tool
            m = dict(m)
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m.get("tool_calls"):
                m["tool_calls"] = [{"function": {"name": c["function"]["name"],
                                                 "arguments": json.loads(c["function"]["arguments"])}}
                                   for c in m["tool_calls"]]
            if m.get("role") == "tool":
                m["tool_name"] = names.get(m.pop("tool_call_id", ""), "")
            msgs.append(m)
        reply = clients[site].chat(model=model, messages=msgs, tools=tools or None,
                                   options={"temperature": 0, "num_predict": 128})
        calls = [{"id": f"call_{n}", "name": c.function.name, "arguments": dict(c.function.arguments)}
                 for n, c in enumerate(reply.message.tool_calls or [])]
        return reply.message.content or "", calls
    return call


def turn(call: Call, text: str) -> str:
    """One user turn through the agent: the router, then the site it names."""
    user = [{"role": "user", "content": text}]
    route = call("router", ROUTER, user, [])[0].strip().strip(".").lower()
    if route.startswith("weather"):
        _, calls = call("weather", WEATHER, user, TOOLS)
        if not calls:
            return "(the weather agent did not look it up)"
        c = calls[0]
        city = str(c["arguments"].get("city", "")).strip()
        report = FORECAST.get(city.lower(), "no report for that city")
        messages = user + [
            {"role": "assistant", "content": "", "tool_calls": [{"id": c["id"], "type": "function", "function": {
                "name": c["name"], "arguments": json.dumps(c["arguments"])}}]},
            {"role": "tool", "tool_call_id": c["id"], "content": f"{city}: {report}"}]
        return call("weather_answer", WEATHER_ANSWER, messages, [])[0]
    if route.startswith("timer"):
        raw = call("timer", TIMER, user, [])[0]
        try:
            timer = json.loads(raw.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
            return f"Timer set: {timer['minutes']} min ({timer['label']})."
        except (ValueError, KeyError, TypeError):
            return f"(could not read the timer: {raw!r})"
    return "I'm here to help with the weather and kitchen timers."


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", required=True, help="the model server (openai: its /v1 root; ollama: its host)")
    p.add_argument("--model", required=True)
    p.add_argument("--client", choices=("openai", "ollama"), default="openai")
    p.add_argument("--api-key", default="none", help="openai client: the key (a local server ignores it)")
    p.add_argument("--turns", type=int, default=len(TURNS), help=f"how many of the {len(TURNS)} user turns to run")
    ns = p.parse_args(argv)
    call = (openai_call(ns.base_url, ns.model, ns.api_key) if ns.client == "openai"
            else ollama_call(ns.base_url, ns.model))
    for text in TURNS[:ns.turns]:
        print(f"user:  {text}\nagent: {turn(call, text)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
