"""Prompts for the agent."""

SYSTEM_PROMPT = """You are a planning agent. Today is {current_date}.
Plan the steps before acting."""
