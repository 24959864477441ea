"""Absurd replies: huge, nested, non-finite, invalid Unicode, control characters, floods of calls,
odd shapes of a well-formed reply, absurd usage.

Right: the model's output is graded as the model's (a failure with a failure mode, or a pass when
the answer is right), exactly one record per item, every file bounded and strict, invalid Unicode
and control characters escaped wherever they are shown, and usage a server got wrong never enters
the cost or the --max-cost meter.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.fakeserver import Reply, raw, reply

from ..harness import Checks, Project, Run, Verdict, sane, scenario
from ..oracle import Oracle
from .endpoints import episode, models_fault, passes

BIG = 1024 * 1024


def bounded_files(c: Checks, p: Project, limit: int = 3 * BIG) -> None:
    """No file the session wrote is larger than `limit` (records are at most 1 MiB each)."""
    big = {name: len(text) for name, text in p.files_text().items() if len(text) > limit}
    c.expect(not big, f"files bounded ({big})")


def viewer_ok(c: Checks, p: Project) -> None:
    v = p.root / "reports" / "viewer.html"
    c.expect(v.exists(), "viewer.html written")
    if v.exists():
        import re

        text = v.read_bytes().decode("utf-8", "strict")
        m = re.search(r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', text, re.S)
        if m:
            blob = m.group(1).replace("<\\/", "</")
            try:
                json.loads(blob, parse_constant=lambda n: (_ for _ in ()).throw(ValueError(n)))
            except ValueError as exc:
                c.expect(False, f"viewer data strict JSON ({str(exc)[:80]})")


def _first_turn(bad: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A1: the model's first turn is `bad`, later turns (if any) the reference."""
    oracle = Oracle()

    def respond(body: Any) -> Any:
        return bad(body) if oracle.turn_of(body) == 0 else oracle(body)
    return respond


def _last_turn(bad: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A1: the reference's call first, then `bad` as the answer turn."""
    oracle = Oracle()

    def respond(body: Any) -> Any:
        return oracle(body) if oracle.turn_of(body) == 0 else bad(body)
    return respond


def _reply_case(sid: str, point: str, title: str, action: Callable[[Any], Any], check: Callable[[Checks, Run], None],
                *, provider: str = "openai", extra: dict[str, Any] | None = None, args: tuple[str, ...] = (),
                right: str = "graded as the model's output, one bounded record, no crash",
                first_turn: bool | str = True) -> None:
    @scenario(sid, point, "reply", title, f"{provider} model answers A1 v0's first turn with {title}",
              right)
    def run() -> Verdict:
        play = _last_turn(action) if first_turn == "last" else _first_turn(action) if first_turn else action
        p, r, _ = episode(sid, play, provider=provider,
                          extra=extra, args=("--junitxml", "junit.xml", *args))
        c = Checks()
        check(c, r)
        bounded_files(c, p)
        viewer_ok(c, p)
        junit = p.root / "junit.xml"
        if junit.exists():
            import xml.etree.ElementTree as ET

            try:
                ET.parse(junit)
            except ET.ParseError as exc:
                c.expect(False, f"junit.xml parses ({exc})")
        return c.verdict()


def failed(mode: str | None = None, termination: str | None = None, words: tuple[str, ...] = ()) -> Callable[
        [Checks, Run], None]:
    def check(c: Checks, r: Run) -> None:
        models_fault(c, r, mode=mode, termination=termination, words=words)
    return check


def graded(c: Checks, r: Run) -> None:
    """A verdict either way (passed or failed), never an error, one record."""
    sane(c, r)
    from ..harness import one_record_per_item

    recs = one_record_per_item(c, r)
    c.expect(len(recs) == 1 and not r.outcomes.get("errors"), f"graded, not an error ({r.outcomes})")
    if recs:
        c.note(f"{recs[0]['termination']} {recs[0]['failure_mode']} passed={recs[0]['passed']}")


def raw_call(args_text: str, name: str = "get_attribute") -> Callable[[Any], Any]:
    return lambda b: Reply(None, [(name, args_text)])


def openai_body(message: dict[str, Any], usage: Any = None, finish: str = "stop") -> dict[str, Any]:
    body: dict[str, Any] = {"id": "x", "object": "chat.completion", "created": 1, "model": "tiny",
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


# -- huge ----------------------------------------------------------------------------------------------------
_reply_case("rp01", "7", "10 MB of text", lambda b: reply(content="7" * (10 * BIG)), failed())
_reply_case("rp02", "7", "10 MB of text (ollama)", lambda b: reply(content="x" * (10 * BIG)), failed(),
            provider="ollama")
_reply_case("rp11", "7", "10,000 tool calls in one turn",
            lambda b: reply(tool_calls=[("get_attribute", {"record_id": f"INV-{i}", "attribute": "on_hand"})
                                        for i in range(10_000)]), failed())
_reply_case("rp38", "7", "10,000 tool calls in one turn (ollama)",
            lambda b: reply(tool_calls=[("get_attribute", {"record_id": f"INV-{i}", "attribute": "on_hand"})
                                        for i in range(10_000)]), failed(), provider="ollama")
_reply_case("rp12", "7", "a tool name of 1 MB", lambda b: reply(tool_calls=[("g" * BIG, {"a": 1})]), failed())
_reply_case("rp29", "7", "10 MB of reasoning_content",
            lambda b: raw(openai_body({"role": "assistant", "content": "340", "reasoning_content": "r" * (10 * BIG)})),
            graded)
_reply_case("rp36", "7", "100,000 short lines of text", lambda b: reply(content="no\n" * 100_000), failed())
_reply_case("rp39", "7", "1 MB of arguments in each of 50 calls",
            lambda b: reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "x" * (BIG // 50) + str(i)})
                                        for i in range(50)]), graded)

# -- nested and non-finite -------------------------------------------------------------------------------------
_reply_case("rp03", "3", "arguments nested 100,000 deep (openai string)",
            raw_call('{"a":' * 100_000 + "1" + "}" * 100_000), failed(mode="F2"))
_reply_case("rp04", "5", "arguments with a NaN literal", raw_call('{"record_id": "INV-Q7P2K", "attribute": NaN}'),
            graded)
_reply_case("rp05", "3", "arguments with a 5,000-digit integer",
            raw_call('{"record_id": "INV-Q7P2K", "attribute": ' + "9" * 5000 + "}"), graded)
_reply_case("rp06", "5", "arguments with 1e999 (infinite)", raw_call('{"record_id": "INV-Q7P2K", "n": 1e999}'), graded)
_reply_case("rp40", "3", "ollama arguments holding Infinity",
            lambda b: raw('{"model":"tiny","message":{"role":"assistant","content":"","tool_calls":[{"function":'
                          '{"name":"get_attribute","arguments":{"record_id":"INV-Q7P2K","attribute":Infinity}}}]},'
                          '"done":true}'), graded, provider="ollama")
_reply_case("rp41", "3", "ollama arguments with a 5,000-digit integer",
            lambda b: raw('{"model":"tiny","message":{"role":"assistant","content":"","tool_calls":[{"function":'
                          '{"name":"get_attribute","arguments":{"record_id":"INV-Q7P2K","n":' + "9" * 5000 + '}}}]},'
                          '"done":true}'), graded, provider="ollama")
_reply_case("rp42", "3", "a final answer of 1e309 (ladder number check)", lambda b: reply(content="1e309"),
            failed(), first_turn=False)
_reply_case("rp43", "3", "a final answer of 10**5000 digits", lambda b: reply(content="1" + "0" * 5000),
            failed(), first_turn=False)
_reply_case("rp44", "3", "a final answer of NaN", lambda b: reply(content="NaN"), failed(), first_turn=False)

# -- Unicode and control characters ---------------------------------------------------------------------------
_reply_case("rp07", "5", "a lone surrogate in the text", lambda b: reply(content="340 \ud800\udfff\udbff"), graded,
            first_turn=False)
_reply_case("rp08", "5", "a lone surrogate in a tool name", lambda b: reply(tool_calls=[("get_\ud800", {"a": 1})]),
            failed())
_reply_case("rp09", "9", "ANSI escapes in the text", lambda b: reply(content="\x1b[2J\x1b[31mI cannot\x1b]0;pwn\x07"),
            failed(), first_turn=False)
_reply_case("rp10", "9", "a bidi override in a tool name", lambda b: reply(tool_calls=[("get\u202eetubirtta", {})]),
            failed())
_reply_case("rp30", "5", "NUL and C1 control characters in arguments",
            raw_call('{"record_id": "INV-\\u0000Q7P2K\\u0085", "attribute": "on_hand"}'), graded)
_reply_case("rp31", "5", "NUL bytes in the final text", lambda b: reply(content="340\x00\x00\x0b\x0c"), graded,
            first_turn=False)
_reply_case("rp45", "5", "a lone surrogate in Ollama's text", lambda b: reply(content="\udc80 no idea"), failed(),
            provider="ollama", first_turn=False)
_reply_case("rp46", "5", "an escaped lone surrogate in arguments",
            raw_call('{"record_id": "INV-Q7P2K\\ud800", "attribute": "on_hand"}'), graded)

# -- odd shapes of a reply -------------------------------------------------------------------------------------
_reply_case("rp13", "3", "tool_calls: null and the answer as text",
            lambda b: raw(openai_body({"role": "assistant", "content": "340", "tool_calls": None})), graded,
            first_turn=False)
_reply_case("rp14", "3", "tool_calls as a string",
            lambda b: raw(openai_body({"role": "assistant", "content": None, "tool_calls": "get_attribute()"})), failed())
_reply_case("rp15", "3", "tool_calls: [null]",
            lambda b: raw(openai_body({"role": "assistant", "content": None, "tool_calls": [None]})), failed())
_reply_case("rp16", "3", "a tool call whose function is null",
            lambda b: raw(openai_body({"role": "assistant", "content": None,
                                       "tool_calls": [{"id": "c", "type": "function", "function": None}]})), failed())
_reply_case("rp17", "3", "content as a list of text parts (the answer 340)",
            lambda b: raw(openai_body({"role": "assistant", "content": [{"type": "text", "text": "340"}]})),
            lambda c, r: passes(c, r), first_turn="last",
            right="the server's wire shape is not the model's fault: the text parts are read, the right answer passes")
_reply_case("rp18", "3", "content as a number",
            lambda b: raw(openai_body({"role": "assistant", "content": 340})), graded, first_turn=False)
_reply_case("rp19", "3", "finish_reason length with no content",
            lambda b: raw(openai_body({"role": "assistant", "content": ""}, finish="length")), graded, first_turn=False)
_reply_case("rp25", "3", "Ollama arguments as a JSON string, probe on",
            lambda b: raw({"model": "tiny", "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "get_attribute", "arguments": '{"record_id": "INV-Q7P2K"}'}}]}, "done": True}),
            failed(mode="F2"), provider="ollama", args=(), first_turn=True)
_reply_case("rp26", "3", "Ollama arguments as a list",
            lambda b: raw({"model": "tiny", "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "get_attribute", "arguments": [1, 2]}}]}, "done": True}),
            failed(mode="F2"), provider="ollama")
_reply_case("rp32", "7", "tool call ids of 1 MB, the same id twice",
            lambda b: reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"}, "i" * BIG),
                                        ("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "bin"}, "i" * BIG)]),
            graded)
_reply_case("rp34", "3", "a tool call with id null",
            lambda b: raw(openai_body({"role": "assistant", "content": None, "tool_calls": [
                {"id": None, "type": "function", "function": {"name": "get_attribute",
                                                              "arguments": '{"record_id":"INV-Q7P2K","attribute":"on_hand"}'}}]},
                                      finish="tool_calls")), graded)
_reply_case("rp47", "3", "a message missing from the choice",
            lambda b: raw({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop"}]}),
            lambda c, r: _no_model_failure_or_graded(c, r))


def _no_model_failure_or_graded(c: Checks, r: Run) -> None:
    """A reply with no message is the server's fault (an infrastructure error) or no answer; never a crash."""
    sane(c, r)
    from ..harness import one_record_per_item

    recs = one_record_per_item(c, r)
    c.expect(len(recs) == 1, f"one record ({r.outcomes})")


# -- usage --------------------------------------------------------------------------------------------------------
def _usage_case(sid: str, title: str, usage: Any, provider: str = "openai", ollama_fields: dict[str, Any] | None = None) -> None:
    @scenario(sid, "6", "reply", f"usage {title}",
              f"{provider} model priced per token answers A1 right with usage {title}",
              "the item passes; cost_usd null (unknown) and usage_invalid named: never a negative, absurd or made-up cost")
    def run() -> Verdict:
        oracle = Oracle()

        def respond(body: Any) -> Any:
            good = oracle(body)
            if provider == "ollama":
                msg: dict[str, Any] = {"role": "assistant", "content": good.content or ""}
                if good.tool_calls:
                    msg["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a, *_ in good.tool_calls]
                return raw({"model": "tiny", "message": msg, "done": True, **(ollama_fields or {})})
            msg = {"role": "assistant", "content": good.content}
            if good.tool_calls:
                msg["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                      "function": {"name": n, "arguments": json.dumps(a)}}
                                     for i, (n, a, *_) in enumerate(good.tool_calls)]
            return raw(openai_body(msg, usage=usage, finish="tool_calls" if good.tool_calls else "stop"))
        p, r, _ = episode(sid, respond, provider=provider,
                          extra={"pricing": "{ input_per_mtok = 1.0, output_per_mtok = 2.0, hourly_usd = 3.0 }"})
        c = Checks()
        recs = passes(c, r)
        for x in recs:
            cost = x.get("cost_usd")
            c.expect(cost is None, f"cost unknown ({cost}): a figure the server got wrong is not 0")
            c.expect(x.get("usage_invalid"), f"usage_invalid names the figure ({x.get('usage_invalid')})")
        if recs:
            c.note(f"cost_usd {recs[0].get('cost_usd')}, usage_invalid {recs[0].get('usage_invalid')}")
        return c.verdict()


_usage_case("rp20", "prompt_tokens = -5000", {"prompt_tokens": -5000, "completion_tokens": 7, "total_tokens": 2})
_usage_case("rp21", "completion_tokens = 1e30", {"prompt_tokens": 11, "completion_tokens": 1e30, "total_tokens": 1e30})
_usage_case("rp22", "tokens as words", {"prompt_tokens": "eleven", "completion_tokens": "7.5", "total_tokens": "x"})
_usage_case("rp23", "usage: a list", [1, 2, 3])
_usage_case("rp24", "Ollama negative eval_count and durations", None, provider="ollama",
            ollama_fields={"prompt_eval_count": 11, "eval_count": -70000, "total_duration": -5,
                           "prompt_eval_duration": -1e18, "eval_duration": -3})
_usage_case("rp48", "Ollama durations of 1e30 ns", None, provider="ollama",
            ollama_fields={"prompt_eval_count": 11, "eval_count": 7, "prompt_eval_duration": 1e30,
                           "eval_duration": 1e30})
_usage_case("rp49", "prompt_tokens = 2**70", {"prompt_tokens": 2 ** 70, "completion_tokens": 7, "total_tokens": 2 ** 70})


@scenario("rp28", "6", "reply", "--max-cost against negative usage",
          "openai model priced 1000 USD/Mtok in and out; every answer right; usage alternates +1000 and -100000 "
          "tokens; --agentfloor-runs 30 --max-cost 3 --agentfloor-concurrency 1",
          "the cap stops the session (items skipped, PARTIAL): negative usage never lowers the meter")
def rp28() -> Verdict:
    oracle = Oracle()
    flip = {"n": 0}

    def respond(body: Any) -> Any:
        good = oracle(body)
        flip["n"] += 1
        neg = flip["n"] % 2 == 0
        good.tokens_in = -100_000 if neg else 1000
        good.tokens_out = -100_000 if neg else 1000
        return good
    p, r, _ = episode("rp28", respond, extra={"pricing": "{ input_per_mtok = 1000.0, output_per_mtok = 1000.0 }"},
                      args=("--agentfloor-runs", "30", "--max-cost", "3", "--agentfloor-concurrency", "1"))
    c = Checks()
    sane(c, r)
    recs = r.last_records()
    spent = sum(x.get("cost_usd") or 0 for x in recs)
    c.expect(r.outcomes.get("skipped", 0) > 0, f"the cap stopped the session ({r.outcomes})")
    c.expect(all((x.get("cost_usd") or 0) >= 0 for x in recs), "no negative cost")
    c.note(f"{len(recs)} records, {spent:.2f} USD recorded")
    return c.verdict()


@scenario("rp33", "3", "reply", "the probe answered in text that holds a JSON call (text_leaked)",
          "openai model (probe on); every reply is text '{\"name\": \"get_attribute\", \"arguments\": {}}'",
          "the paper's exclusion: items skipped with the reason, one warning line; no error, no record")
def rp33() -> Verdict:
    p, r, _ = episode("rp33", lambda b: reply(content='{"name": "get_attribute", "arguments": {"record_id": "X"}}'),
                      probe=True)
    c = Checks()
    sane(c, r)
    c.expect(r.outcomes.get("skipped") == 1 and not r.outcomes.get("errors"), f"skipped ({r.outcomes})")
    c.expect("text_leaked" in r.out, "the class is named")
    return c.verdict()


@scenario("rp27", "3", "reply", "OpenAI arguments as an object in the probe and every reply",
          "openai model (probe on); every reply calls get_attribute with arguments as a JSON object",
          "the probe classifies it tool_capable; the item runs and fails as F2 (the model's malformed call)")
def rp27() -> Verdict:
    body = openai_body({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "get_attribute",
                                                      "arguments": {"record_id": "INV-Q7P2K", "attribute": "on_hand"}}}]},
                       finish="tool_calls")
    p, r, _ = episode("rp27", lambda b: raw(body), probe=True)
    c = Checks()
    models_fault(c, r, mode="F2")
    return c.verdict()


@scenario("rp50", "3", "reply", "a probe reply of 5 MB nested JSON (ollama)",
          "ollama model (probe on); the probe's reply is a body nested 200,000 deep, the rest is A1's reference",
          "the probe does not take the model out: the item runs and passes")
def rp50() -> Verdict:
    oracle = Oracle()
    deep = '{"model":"tiny","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"x","arguments":' \
           + '{"a":' * 200_000 + "1" + "}" * 200_000 + '}}]},"done":true}'
    seen = {"n": 0}

    def respond(body: Any) -> Any:
        seen["n"] += 1
        return raw(deep) if seen["n"] == 1 else oracle(body)
    p, r, _ = episode("rp50", respond, provider="ollama", probe=True)
    c = Checks()
    passes(c, r)
    return c.verdict()
