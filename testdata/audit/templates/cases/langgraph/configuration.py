"""Configuration of the agent, set per deployment."""

from dataclasses import dataclass


@dataclass(kw_only=True)
class Configuration:
    agent_name: str = "Volt"
    model: str = "vllm/qwen2.5-7b-instruct"
