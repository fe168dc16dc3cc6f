"""codeloop.llm: one data model over OpenAI, Anthropic, Gemini and OpenAI-compatible servers.

Implements ``specs/unified-llm-spec.md``. Layers (§2.1): ``types`` and ``adapters.base``
(the contract), ``sse``/``adapters.flow``/``retry`` (adapter utilities), ``client`` (routing and
middleware), ``generate``/``structured`` (tool loop, structured output). Importing this
package has no side effects; the native adapters load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codeloop.llm.abort import AbortController, AbortSignal
from codeloop.llm.accumulator import StreamAccumulator
from codeloop.llm.adapters.base import AdapterTimeout, ProviderAdapter
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.catalog import ModelInfo, get_latest_model, get_model_info, list_models
from codeloop.llm.client import Client, get_default_client, set_default_client
from codeloop.llm.errors import (
    AbortError,
    AccessDeniedError,
    AuthenticationError,
    ConfigurationError,
    ContentFilterError,
    ContextLengthError,
    InvalidRequestError,
    InvalidToolCallError,
    NetworkError,
    NoObjectGeneratedError,
    NotFoundError,
    ProviderError,
    QuotaExceededError,
    RateLimitError,
    RequestTimeoutError,
    SDKError,
    ServerError,
    StreamError,
    UnsupportedToolChoiceError,
)
from codeloop.llm.generate import (
    GenerateResult,
    StepResult,
    StreamResult,
    TimeoutConfig,
    generate,
    generate_sync,
    stream,
)
from codeloop.llm.retry import RetryPolicy, retry
from codeloop.llm.structured import generate_object, stream_object
from codeloop.llm.tool import Tool, execute_tool_calls
from codeloop.llm.types import (
    AudioData,
    ContentKind,
    ContentPart,
    DocumentData,
    FinishReason,
    ImageData,
    Message,
    RateLimitInfo,
    Request,
    Response,
    ResponseFormat,
    Role,
    StreamEvent,
    StreamEventType,
    ThinkingData,
    ToolCall,
    ToolCallData,
    ToolChoice,
    ToolDefinition,
    ToolResult,
    ToolResultData,
    Usage,
    Warning,
)

if TYPE_CHECKING:
    from codeloop.llm.adapters.anthropic import AnthropicAdapter
    from codeloop.llm.adapters.gemini import GeminiAdapter
    from codeloop.llm.adapters.openai import OpenAIAdapter

_LAZY = {
    "OpenAIAdapter": "codeloop.llm.adapters.openai",
    "AnthropicAdapter": "codeloop.llm.adapters.anthropic",
    "GeminiAdapter": "codeloop.llm.adapters.gemini",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'codeloop.llm' has no attribute {name!r}")


__all__ = [
    "AbortController", "AbortError", "AbortSignal", "AccessDeniedError", "AdapterTimeout", "AnthropicAdapter",
    "AudioData", "AuthenticationError", "Client", "ConfigurationError", "ContentFilterError", "ContentKind",
    "ContentPart", "ContextLengthError", "DocumentData", "FinishReason", "GeminiAdapter", "GenerateResult",
    "ImageData", "InvalidRequestError", "InvalidToolCallError", "Message", "ModelInfo", "NetworkError",
    "NoObjectGeneratedError", "NotFoundError", "OpenAIAdapter", "OpenAICompatibleAdapter", "ProviderAdapter",
    "ProviderError", "QuotaExceededError", "RateLimitError", "RateLimitInfo", "Request", "RequestTimeoutError",
    "Response", "ResponseFormat", "RetryPolicy", "Role", "SDKError", "ScriptedAdapter", "ServerError",
    "StepResult", "StreamAccumulator", "StreamError", "StreamEvent", "StreamEventType", "StreamResult",
    "ThinkingData", "TimeoutConfig", "Tool", "ToolCall", "ToolCallData", "ToolChoice", "ToolDefinition",
    "ToolResult", "ToolResultData", "UnsupportedToolChoiceError", "Usage", "Warning", "execute_tool_calls",
    "generate", "generate_object", "generate_sync", "get_default_client", "get_latest_model", "get_model_info",
    "list_models", "retry", "set_default_client", "stream", "stream_object", "text_response", "tool_call_response",
]
