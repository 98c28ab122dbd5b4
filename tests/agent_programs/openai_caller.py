"""An external agent that only calls a model: the openai SDK, pointed by OPENAI_BASE_URL and
OPENAI_API_KEY as any program would be, makes one Responses call and one streamed Chat
Completions call per invocation.

For the metering tests it appends one JSON line per invocation to the file named by
`METER_AGENT_REPORT`: its invocation number, the environment it was given and how its calls
went. `METER_AGENT_MODE=hang` makes it wait after its calls until the runner kills it.
"""

from __future__ import annotations

import json
import os
import time

import openai


def main() -> None:
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the env
    model = os.environ.get("METER_AGENT_MODEL", "gpt-5-mini")
    outcomes = []
    try:
        answer = client.responses.create(model=model, input="Any alerts?")
        outcomes.append({"ok": answer.output_text})
        stream = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Summarise."}], stream=True
        )
        outcomes.append({"ok": "".join(c.choices[0].delta.content or "" for c in stream)})
    except openai.APIStatusError as refused:
        outcomes.append({"status": refused.status_code, "code": refused.code})
    with open(os.environ["METER_AGENT_REPORT"], "a", encoding="utf-8") as report:
        line = {"n": os.environ["MARATHON_INVOCATION"], "env": dict(os.environ), "calls": outcomes}
        report.write(json.dumps(line) + "\n")
    if os.environ.get("METER_AGENT_MODE") == "hang":
        time.sleep(600)


if __name__ == "__main__":
    main()
