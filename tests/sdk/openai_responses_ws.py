"""Drives the Responses API's WebSocket mode (wasmgate's `GET /v1/responses` upgraded) with the
official `openai` Python SDK, `client.responses.connect()`, and checks what comes back:

- `tool_chain`: one socket, three turns. The first asks with a function tool and gets a
  `function_call`; the second sends only `previous_response_id` and the call's output and gets
  the answer; the third sends only `previous_response_id` and a new user message (with `--mock`,
  the answer says the upstream saw both user turns, so the history was not resent by the client
  but reached the model all the same).
- `failed_turn`: a turn on a model no route serves gets the reference's `error` event (status,
  type, code, message), and the next turn on the same socket completes.

    python openai_responses_ws.py --base-url http://127.0.0.1:PORT/v1 --api-key KEY --model M
                                  [--mock] [--only tool_chain,failed_turn]

Prints `ok <scenario>` for each scenario that holds, and `turns <n>` with the turns that should
have completed (each a ledger record); exits 1 at the first scenario that does not hold."""

import argparse
import json
import sys

import openai

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a given city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
    "strict": True,
}

# The most events one turn may take before the scenario gives up on it.
MAX_EVENTS = 500


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def turn(connection, **create):
    """Sends one `response.create` and reads its events up to the last: the final response (or
    the error event) and the kinds of every event seen."""
    connection.send({"type": "response.create", **create})
    kinds, deltas, numbers = [], [], []
    for _ in range(MAX_EVENTS):
        event = connection.recv()
        kinds.append(event.type)
        if event.type == "error":
            return event, kinds, deltas
        numbers.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type in ("response.completed", "response.failed", "response.incomplete"):
            check(numbers == sorted(set(numbers)), "sequence numbers increasing", numbers)
            return event.response, kinds, deltas
    raise Failed(f"no last event in {MAX_EVENTS}: {kinds[-5:]}")


def items(response, kind):
    return [item for item in response.output if item.type == kind]


def completed(response, kinds, where):
    check(getattr(response, "status", None) == "completed", f"{where}: a completed response", response)
    check(kinds[0] == "response.created" and kinds[-1] == "response.completed", f"{where}: created first, completed last", kinds)
    usage = response.usage
    check(usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0, f"{where}: usage counted", usage)


def tool_chain(client, args):
    with client.responses.connect() as connection:
        first, kinds, _ = turn(connection, model=args.model, input="What is the weather in Paris?", tools=[WEATHER_TOOL])
        completed(first, kinds, "first turn")
        calls = items(first, "function_call")
        check(calls and calls[0].name == "get_weather" and json.loads(calls[0].arguments), "a call of get_weather", first.output)
        check("response.function_call_arguments.delta" in kinds, "the arguments streamed", kinds)
        outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": "18 degrees, cloudy"} for c in calls]
        # Only the new input: the call itself is the previous response's.
        second, kinds, deltas = turn(connection, model=args.model, previous_response_id=first.id, input=outputs,
                                     tools=[WEATHER_TOOL])
        completed(second, kinds, "second turn")
        check(second.previous_response_id == first.id, "the chain's link", second.previous_response_id)
        check(second.output_text and not items(second, "function_call"), "an answer after the call's output", second.output)
        check(len(deltas) > 1 and "".join(deltas) == second.output_text, "the text streamed in deltas", deltas)
        # The history holds a tool call, so the tool is offered again (a Messages upstream wants
        # it), not to be called.
        third, kinds, _ = turn(connection, model=args.model, previous_response_id=second.id,
                               input=[{"role": "user", "content": "And what should I wear?"}],
                               tools=[WEATHER_TOOL], tool_choice="none")
        completed(third, kinds, "third turn")
        check(third.output_text and not items(third, "function_call"), "a text answer", third.output)
        check(third.usage.input_tokens > second.usage.input_tokens or not args.mock,
              "the third turn sees the ones before", [second.usage, third.usage])
        if args.mock:
            check(third.output_text.endswith("(user turns: 2)"), "both user turns seen upstream", third.output_text)
    return 3


def failed_turn(client, args):
    with client.responses.connect() as connection:
        error, kinds, _ = turn(connection, model="nowhere/no-such-model", input="Hi")
        check(kinds == ["error"], "one error event", kinds)
        check(error.status == 404 and error.error.type and error.error.message, "the reference's error event", error)
        # A second failure, refused by the upstream (an unknown previous_response_id).
        error, kinds, _ = turn(connection, model=args.model, previous_response_id="resp_0123456789abcdef", input="Hi")
        check(kinds[-1] == "error" and 400 <= (error.status or 0) < 500, "the upstream's refusal as an error event", error)
        # The socket survived both.
        after, kinds, _ = turn(connection, model=args.model, input="Say hello.")
        completed(after, kinds, "the turn after the failures")
        check(after.output_text, "output_text", after.output)
    return 1


SCENARIOS = {"tool_chain": tool_chain, "failed_turn": failed_turn}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--mock", action="store_true", help="also check what only the mock promises")
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30)
    turns = 0
    for name in args.only.split(","):
        try:
            if name not in SCENARIOS:
                raise Failed(f"no scenario {name}; there are {list(SCENARIOS)}")
            turns += SCENARIOS[name](client, args)
        except Exception as error:
            print(f"FAILED {name}: {type(error).__name__}: {error}")
            sys.exit(1)
        print(f"ok {name}")
    print(f"turns {turns}")


if __name__ == "__main__":
    main()
