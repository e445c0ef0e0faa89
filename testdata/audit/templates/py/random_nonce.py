import random

PROMPT = """
    Variant {nonce}.
    You are a creative writing partner.
"""


def render():
    return PROMPT.format(nonce=random.randint(0, 1000))
