import uuid

SYSTEM_TEMPLATE = "Request {request_id}. You are the ACME order assistant; answer briefly."


def render():
    return SYSTEM_TEMPLATE.format(request_id=uuid.uuid4().hex)
