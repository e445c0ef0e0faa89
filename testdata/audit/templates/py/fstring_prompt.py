"""A module docstring that mentions {today} and must not count."""
from datetime import datetime


def build():
    """Build the prompt: a docstring with {system_time} that is not a prompt."""
    system = f"Now: {datetime.now().isoformat()}\nYou are a careful assistant."
    if not system:
        raise ValueError(f"empty prompt built at {datetime.now()}")
    return system
