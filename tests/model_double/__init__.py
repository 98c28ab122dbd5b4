"""A scripted model endpoint on loopback for testing agents that call models over HTTP.

    with ModelDouble() as double:            # SreScript by default; any Conversation -> Turn
        env = {"OPENAI_BASE_URL": double.openai_base_url,        # http://127.0.0.1:<port>/v1
               "ANTHROPIC_BASE_URL": double.anthropic_base_url}  # http://127.0.0.1:<port>
        ...
        double.exchanges           # every request: headers (lower-case), body, turn, usage
        double.model_exchanges()   # the model requests only (responses / chat / messages)

`ModelDouble` serves the OpenAI Responses and Chat Completions APIs and the Anthropic Messages API
(streamed with SSE and not), answers each request with the turn its script picks from the
conversation so far, and reports usage as a fixed function of the sizes (`Exchange.usage`), so a
meter's counts can be checked exactly. `fail_next` queues HTTP errors, `require_key` demands a
key, `stream_delay_s` slows streams down. See `server.py` for the routes, `wire_openai.py` and
`wire_anthropic.py` for the event shapes and their sources, `script.py` for the default script.
"""

from .conversation import Conversation, ToolResult
from .script import SreScript, Text, ToolCall, Turn
from .server import Exchange, ModelDouble

__all__ = [
    "Conversation",
    "Exchange",
    "ModelDouble",
    "SreScript",
    "Text",
    "ToolCall",
    "ToolResult",
    "Turn",
]
