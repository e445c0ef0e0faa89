GREETING_TEMPLATE = "Hello %(user_name)s! You are chatting with the ACME assistant."


def greet(user):
    return GREETING_TEMPLATE % {"user_name": user.name}
