import time


def system_prompt(tools):
    prompt = "You are Acme's support bot. Current time: " + time.strftime("%H:%M") + ". Be brief, " + "cite {the} handbook."
    return prompt
