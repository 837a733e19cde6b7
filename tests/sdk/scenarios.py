"""What the OpenAI SDK programs here share (`openai_api.py`, `passthrough.py`): a failed check,
the request id each scenario's requests carry, the client, and the loop that runs the scenarios,
printing `ok <scenario>` for each that holds and exiting 1 at the first that does not."""

import sys

import openai


class Failed(Exception):
    pass


def check(condition, what, got=None):
    if not condition:
        raise Failed(f"{what} (got: {got!r})")


def request_ids(prefix):
    """`rid(name)`: the headers that give a scenario's requests the `x-request-id`
    `<prefix>-<name>`, so that the test can read their ledger records."""
    return lambda name: {"x-request-id": f"{prefix}-{name}"}


def run(scenarios, args, names=None):
    """Runs `scenarios[name](client, args)` for each of `names` (all by default) with an OpenAI
    client on `args.base_url` and `args.api_key`, which never retries."""
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=30)
    for name in names or list(scenarios):
        try:
            scenarios[name](client, args)
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            print(f"FAILED {name}: {type(e).__name__}: {e}")
            sys.exit(1)
        print(f"ok {name}")
