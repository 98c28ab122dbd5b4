"""A scripted model endpoint on loopback for testing agents that call models over HTTP.

`ModelDouble` serves the OpenAI Responses and Chat Completions APIs and the Anthropic Messages API
(streaming and not), answers each request with the next turn its script picks from the
conversation so far, and records every request. See `server.py` for the routes and `script.py`
for the default SRE script.
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
