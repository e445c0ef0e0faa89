from datetime import datetime, UTC


def system_message(ctx):
    return ctx.system_prompt.format(system_time=datetime.now(tz=UTC).isoformat())
