from datetime import date

from .prompts import SYSTEM_PROMPT


def system_message(ctx):
    return SYSTEM_PROMPT.format(current_date=date.today().strftime("%Y-%m-%d"))
