"""Review of tool calls: the decision protocol, the runner and the built-in policies."""

from .decision import Decision, Hook, Risk, ToolCall, Verdict
from .policies import (
    AutoApprovePolicy,
    DenyAllPolicy,
    RiskBasedPolicy,
    policy_from_name,
)
from .runner import HookRunner, Review

__all__ = [
    "AutoApprovePolicy",
    "Decision",
    "DenyAllPolicy",
    "Hook",
    "HookRunner",
    "Review",
    "Risk",
    "RiskBasedPolicy",
    "ToolCall",
    "Verdict",
    "policy_from_name",
]
