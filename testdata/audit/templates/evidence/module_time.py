from datetime import datetime

STARTED_AT = datetime.now().strftime("%Y-%m-%d %H:%M:%S")

SYSTEM_PROMPT = "Session opened {started}. You are the support assistant of ACME."


def header():
    return SYSTEM_PROMPT.format(started=STARTED_AT)
