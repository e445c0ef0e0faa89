from datetime import datetime

from .prompts import SYSTEM_PROMPT

AGENT_NAME = "Ada"


def system_message(role, company):
    return SYSTEM_PROMPT.format(
        agent_name=AGENT_NAME,
        role=role,
        company_name=company,
        today=datetime.now().strftime("%d %B %Y"),
    )
