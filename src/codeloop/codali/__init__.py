"""codali: context for stateless role agents (specs/codali-agent-protocol.md).

- :func:`parse_agent_request` finds and validates an ``AGENT_REQUEST v1`` in a model's reply;
- :func:`answer_request` answers it from the code index and the workspace as one
  :class:`CodaliResponse` (``CODALI_RESPONSE v1``);
- :class:`RolesPipeline` runs librarian → architect → builder → critic until PASS.
"""

from codeloop.codali.answer import answer_request, answer_request_sync
from codeloop.codali.critic import CriticResult
from codeloop.codali.pipeline import ModelChoice, PipelineConfig, PipelineResult, RolesPipeline
from codeloop.codali.request import AgentRequest, AgentRequestError, Need, parse_agent_request
from codeloop.codali.response import CodaliResponse, dumps

__all__ = [
    "AgentRequest",
    "AgentRequestError",
    "CodaliResponse",
    "CriticResult",
    "ModelChoice",
    "Need",
    "PipelineConfig",
    "PipelineResult",
    "RolesPipeline",
    "answer_request",
    "answer_request_sync",
    "dumps",
    "parse_agent_request",
]
