"""The agent graph: the model call formats the system prompt on every call."""

from datetime import UTC, datetime

from .configuration import Configuration
from .prompts import SYSTEM_PROMPT


async def call_model(state, config):
    configuration = Configuration.from_runnable_config(config)
    system_message = SYSTEM_PROMPT.format(
        agent_name=configuration.agent_name,
        system_time=datetime.now(tz=UTC).isoformat(),
    )
    return [{"role": "system", "content": system_message}, *state.messages]
