import uuid

HEADER = "Request {rid}\nYou are the routing agent. Follow the handbook, escalate when unsure.".format(rid=uuid.uuid4())
