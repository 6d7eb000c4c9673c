#!/usr/bin/env python3
"""Golden renders of chat templates, from the reference: python3-jinja2 set up as transformers
sets it up for apply_chat_template (ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension; tojson as json.dumps(ensure_ascii=False, key order
kept); the globals raise_exception and strftime_now). strftime_now formats a FIXED time (UTC,
--now) so that renders are reproducible.

Templates: the chat_template of each tokenizer_config.json in the tokenizer cache (see
scripts/fetch-tokenizers.sh; a chat_template.jinja next to it when the JSON has none, as for
gpt-oss) and every tests/data/chat-templates/*.jinja of the repository. Each template is rendered
for a fixed list of conversations (the context apply_chat_template builds: messages, tools,
documents, add_generation_prompt, bos_token, eos_token and extra keyword arguments) and the
output, or the exception's message, is written with its input to
<cache>/goldens/chat_templates.json, which src/tokenizer/chat_template_golden_test.cc reads.

Needs python3 and jinja2 only (Debian: python3-jinja2).
Usage: scripts/chat-template-goldens.py [--cache DIR] [--now EPOCH] [--out FILE]
"""

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAMILIES = ["llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss"]
DEFAULT_NOW = 1754386200  # 2025-08-05 09:30:00 UTC
# Special tokens for the repository's own templates (they have no tokenizer_config.json).
REPO_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def default_cache():
    if os.environ.get("INFERBENCH_TOKENIZERS"):
        return Path(os.environ["INFERBENCH_TOKENIZERS"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "inferbench" / "tokenizers"


def make_environment(now):
    """The environment of transformers' _compile_jinja_template / render_jinja_template."""
    try:
        import jinja2
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        sys.exit("chat-template-goldens: python3 jinja2 is missing (Debian: apt-get install python3-jinja2)")

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env, jinja2.__version__


def token_content(value):
    """bos_token / eos_token as a string or an AddedToken object's content."""
    if isinstance(value, dict):
        return value.get("content")
    return value


def load_config(path):
    """(template text, bos, eos) of a tokenizer_config.json, as load_tokenizer_config reads it."""
    config = json.loads(path.read_text(encoding="utf-8"))
    template = config.get("chat_template")
    if isinstance(template, list):
        template = next((t["template"] for t in template if t.get("name") == "default"), None)
    if template is None:
        sibling = path.parent / "chat_template.jinja"
        if sibling.exists():
            template = sibling.read_text(encoding="utf-8")
    return template, token_content(config.get("bos_token")), token_content(config.get("eos_token"))


# ---- conversations ----

def msg(role, content, **extra):
    m = {"role": role, "content": content}
    m.update(extra)
    return m


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "description": "Forecast days", "default": 1},
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Search the documentation",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "filters": {"type": "object", "properties": {"year": {"type": "number"},
                                                             "exact": {"type": "boolean"}}},
                "limit": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
                "mode": {"type": ["string", "null"], "nullable": True},
            },
            "required": ["query"],
        },
    },
}

NO_ARGS_TOOL = {"type": "function",
                "function": {"name": "get_time", "description": "Current time", "parameters": {}}}


def weather_call(arguments):
    return {"type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def generic_cases():
    """Conversations every template renders (plain role/content messages)."""
    system = "You are a helpful assistant."
    return [
        ("single_user", [msg("user", "Hello, how are you?")], True, {}),
        ("single_user_no_generation_prompt", [msg("user", "Hello, how are you?")], False, {}),
        ("system_user", [msg("system", system), msg("user", "What is 2+2?")], True, {}),
        ("multi_turn", [msg("system", system), msg("user", "Hi!"),
                        msg("assistant", "Hello! How can I help you today?"),
                        msg("user", "Tell me a joke about tokenizers.")], True, {}),
        ("ends_with_assistant", [msg("user", "Say hi."), msg("assistant", "Hi.")], False, {}),
        ("long_conversation", [msg("user", f"Question {i}") if i % 2 == 0 else
                               msg("assistant", f"Answer {i}") for i in range(9)], True, {}),
        ("whitespace", [msg("system", "  \n  Be terse.  \n"), msg("user", "\n\n  spaced out  \n\t"),
                        msg("assistant", "  an answer with a trailing newline\n"),
                        msg("user", " last ")], True, {}),
        ("unicode", [msg("user", "Привет, 世界! 👋 café — naïve ½ ǅ\u00a0nbsp \u2028 sep"),
                     msg("assistant", "Ответ: 😀 ✓"), msg("user", "ありがとう")], True, {}),
        ("empty_content", [msg("user", "")], True, {}),
        ("empty_system", [msg("system", ""), msg("user", "x")], True, {}),
        ("template_like_content", [msg("user", "{{ not a tag }} {% raw %} <|im_start|> \\n '\"")],
         True, {}),
    ]


def qwen3_cases():
    tools = [WEATHER_TOOL, NO_ARGS_TOOL]
    return [
        ("enable_thinking_false", [msg("user", "Quick answer please.")], True,
         {"enable_thinking": False}),
        ("enable_thinking_true", [msg("user", "Think first.")], True, {"enable_thinking": True}),
        ("reasoning_content", [msg("user", "2+2?"),
                               msg("assistant", "4", reasoning_content="\nAdd two and two.\n")],
         False, {}),
        ("think_in_history", [msg("user", "2+2?"),
                              msg("assistant", "<think>\nsimple sum\n</think>\n\n4"),
                              msg("user", "and 3+3?")], True, {}),
        ("think_after_last_query", [msg("user", "2+2?"),
                                    msg("assistant", "<think>\nsum\n</think>\n\n4")], False, {}),
        ("tools", [msg("system", "Use tools."), msg("user", "Weather in Paris?")], True,
         {"tools": tools}),
        ("tool_round_trip", [
            msg("user", "Weather in Paris and Rome?"),
            msg("assistant", "", tool_calls=[weather_call({"city": "Paris"}),
                                             weather_call('{"city": "Rome"}')]),
            msg("tool", '{"temp": 21}'), msg("tool", '{"temp": 25}'),
            msg("assistant", "Paris 21, Rome 25."), msg("user", "Thanks")], True, {"tools": tools}),
        ("tool_call_with_text", [
            msg("user", "Weather?"),
            msg("assistant", "Let me check.", tool_calls=[{"name": "get_weather",
                                                            "arguments": {"city": "Oslo"}}]),
            msg("tool", "<tool_response>cold</tool_response>")], True, {"tools": tools}),
    ]


def deepseek_cases():
    return [
        ("two_system_messages", [msg("system", "Rule one."), msg("system", "Rule two."),
                                 msg("user", "Go")], True, {}),
        ("tool_calls", [
            msg("user", "Weather in Paris and Rome?"),
            msg("assistant", None, tool_calls=[weather_call('{"city": "Paris"}'),
                                               weather_call('{"city": "Rome"}')]),
            msg("tool", "21C"), msg("tool", "25C"),
            msg("assistant", "Paris is 21C, Rome 25C."), msg("user", "Thanks!")], True, {}),
        ("tool_output_last", [
            msg("user", "Weather?"),
            msg("assistant", None, tool_calls=[weather_call('{"city": "Oslo"}')]),
            msg("tool", "-3C")], True, {}),
    ]


def gptoss_cases():
    tools = [WEATHER_TOOL, SEARCH_TOOL, NO_ARGS_TOOL]
    return [
        ("developer_message", [msg("developer", "Answer in French."), msg("user", "Hello")], True,
         {}),
        ("reasoning_and_identity", [msg("user", "Hi")], True,
         {"reasoning_effort": "high", "model_identity": "You are a test model."}),
        ("builtin_tools", [msg("user", "Search the web")], True,
         {"builtin_tools": ["browser", "python"]}),
        ("function_tools", [msg("system", "Be precise."), msg("user", "Weather?")], True,
         {"tools": tools}),
        ("tool_round_trip", [
            msg("user", "Weather in Paris?"),
            msg("assistant", "", thinking="Need the weather tool.",
                tool_calls=[weather_call({"city": "Paris", "days": 2})]),
            msg("tool", '{"temp": 21, "sky": "clear"}'),
            msg("assistant", "It is 21C and clear.", thinking="Report it."),
            msg("user", "Thanks")], True, {"tools": tools}),
        ("pending_tool_call", [
            msg("user", "Weather?"),
            msg("assistant", "", thinking="Call it.", tool_calls=[weather_call({"city": "Oslo"})]),
            msg("tool", "cold")], True, {"tools": tools}),
        ("training_final_turn", [msg("user", "2+2?"),
                                 msg("assistant", "4", thinking="Simple addition.")], False, {}),
        ("channel_tags_in_content", [msg("user", "x"),
                                     msg("assistant", "<|channel|>analysis<|message|>oops")],
         True, {}),
        ("tool_without_call", [msg("user", "x"), msg("tool", "orphan")], True, {}),
        # gpt-oss's template adds a oneOf parameter's default to a string: TypeError for a number.
        ("oneof_number_default", [msg("user", "x")], True,
         {"tools": [{"type": "function", "function": {
             "name": "f", "description": "d", "parameters": {"type": "object", "properties": {
                 "n": {"oneOf": [{"type": "integer"}, {"type": "string"}], "default": 3}}}}}]}),
        ("content_and_thinking_with_call", [
            msg("user", "x"),
            msg("assistant", "text", thinking="thought", tool_calls=[weather_call({"city": "A"})])],
         True, {"tools": tools}),
    ]


def repo_cases():
    tools = [WEATHER_TOOL, SEARCH_TOOL]
    return [
        ("tools_and_calls", [
            msg("system", "# Weather bot\nBe brief."), msg("user", "Weather in Paris, please?"),
            msg("assistant", None, tool_calls=[weather_call({"city": "Paris"}),
                                               {"name": "search_docs", "arguments": '{"query": "x"}'}]),
            msg("tool", '{"temp": 21}'), msg("ipython", "plain text result"),
            msg("user", "ok - thanks")], True, {"tools": tools}),
        ("mapping_tool_result", [msg("user", "Weather?"),
                                 msg("assistant", None, tool_calls=[weather_call({"city": "A"})]),
                                 msg("tool", {"temp": 21, "tags": ["a", "b"]})], True, {}),
        ("date_string", [msg("user", "What day is it?")], True, {"date_string": "01 Jan 2030"}),
        ("unknown_role", [msg("user", "x"), msg("narrator", "y")], True, {}),
        ("no_text_messages", [msg("assistant", None, tool_calls=[weather_call({"city": "A"})])],
         False, {}),
    ]


FAMILY_CASES = {"qwen3": qwen3_cases, "deepseek_v3": deepseek_cases, "gptoss": gptoss_cases}


def context_for(messages, add_generation_prompt, kwargs, bos, eos):
    """What apply_chat_template passes to render() (and what chat_context() builds)."""
    ctx = {"messages": messages, "tools": None, "documents": None,
           "add_generation_prompt": add_generation_prompt}
    if bos is not None:
        ctx["bos_token"] = bos
    if eos is not None:
        ctx["eos_token"] = eos
    ctx.update(kwargs)
    return ctx


def plain(messages, kwargs):
    """Whether chat_context() can build this context (role/content strings only)."""
    return "tools" not in kwargs and all(
        set(m) == {"role", "content"} and isinstance(m["content"], str) for m in messages)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--cache", type=Path, default=default_cache(),
                        help="the tokenizer cache (default: $INFERBENCH_TOKENIZERS, else "
                             "$XDG_CACHE_HOME or ~/.cache + /inferbench/tokenizers)")
    parser.add_argument("--now", type=int, default=DEFAULT_NOW,
                        help="the time strftime_now formats, seconds since the epoch (UTC; "
                             f"default {DEFAULT_NOW})")
    parser.add_argument("--out", type=Path, help="default: CACHE/goldens/chat_templates.json")
    args = parser.parse_args()

    env, version = make_environment(args.now)
    templates = []  # (family, origin, file, text, bos, eos, cases)
    for family in FAMILIES:
        path = args.cache / family / "tokenizer_config.json"
        if not path.exists():
            print(f"chat-template-goldens: {path} is missing (run scripts/fetch-tokenizers.sh)",
                  file=sys.stderr)
            continue
        text, bos, eos = load_config(path)
        if text is None:
            print(f"chat-template-goldens: {family}: no chat_template (and no "
                  f"{path.parent / 'chat_template.jinja'}); skipped", file=sys.stderr)
            continue
        cases = generic_cases() + FAMILY_CASES.get(family, lambda: [])()
        templates.append((family, "cache", f"{family}/tokenizer_config.json", text, bos, eos, cases))
    for path in sorted((REPO / "tests" / "data" / "chat-templates").glob("*.jinja")):
        cases = generic_cases() + repo_cases()
        templates.append((f"repo:{path.stem}", "repo", str(path.relative_to(REPO)),
                          path.read_text(encoding="utf-8"), REPO_TOKENS["bos_token"],
                          REPO_TOKENS["eos_token"], cases))

    out_cases = []
    for family, origin, file, text, bos, eos, cases in templates:
        compiled = env.from_string(text)
        for name, messages, agp, kwargs in cases:
            ctx = context_for(messages, agp, kwargs, bos, eos)
            case = {"family": family, "name": name, "template_origin": origin,
                    "template_file": file, "plain": plain(messages, kwargs),
                    "add_generation_prompt": agp, "kwargs": kwargs, "context": ctx}
            try:
                case["expected"] = compiled.render(**ctx)
            except Exception as e:  # the template raised: the golden is its message
                case["error"] = str(e)
                case["error_type"] = type(e).__name__
            out_cases.append(case)

    out = args.out or args.cache / "goldens" / "chat_templates.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"generator": "scripts/chat-template-goldens.py", "jinja2": version, "now": args.now,
           "templates": {family: text for family, _, _, text, *_ in templates},
           "cases": out_cases}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out)
    counts = {}
    for c in out_cases:
        counts[c["family"]] = counts.get(c["family"], 0) + 1
    print(f"chat-template-goldens: {len(out_cases)} cases ("
          + ", ".join(f"{f} {n}" for f, n in counts.items()) + f") -> {out}")


if __name__ == "__main__":
    main()
