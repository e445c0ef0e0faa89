# Reference renders for kvcheck's engine test: Python's jinja2 set up as transformers sets it up
# for chat templates (sandboxed, trim_blocks, lstrip_blocks, loopcontrols, the generation tag,
# tojson without ASCII escaping, raise_exception, strftime_now), with strftime_now reading the
# fixed clock given in the contexts file.
#
# usage: jinja2_render.py CONTEXTS.json TEMPLATE... > renders.json
# CONTEXTS.json: {"now": "2024-07-26T10:00:07.123456", "contexts": [{"name": ..., "vars": {...}}]}
# A TEMPLATE ending in .json is a tokenizer_config.json (its chat_template, the first one of a
# list). The output maps "BASENAME|CONTEXT" to {"text": ...} or {"error": ...}.
import datetime
import json
import os
import sys

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

def raise_exception(msg):
    raise TemplateError(msg)
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
spec = json.load(open(sys.argv[1]))
NOW = datetime.datetime.fromisoformat(spec["now"])
def strftime_now(fmt):
    return NOW.strftime(fmt)

class Generation(Extension):
    # {% generation %}...{% endgeneration %}: transformers marks assistant text with it; the
    # text renders as it is.
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.Scope(body).set_lineno(lineno)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, Generation])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

def template_of(path):
    src = open(path, encoding="utf-8").read()
    if path.endswith(".json"):
        ct = json.loads(src)["chat_template"]
        if isinstance(ct, list):
            ct = ct[0]["template"]
        return ct, json.loads(src)
    return src, {}

ctxs = spec["contexts"]
out = {}
for path in sys.argv[2:]:
    name = os.path.basename(path)
    try:
        src, cfg = template_of(path)
        t = env.from_string(src)
    except Exception as e:
        for c in ctxs: out[name + "|" + c["name"]] = {"error": "compile: " + str(e)}
        continue
    for c in ctxs:
        try:
            out[name + "|" + c["name"]] = {"text": t.render(**c["vars"])}
        except Exception as e:
            out[name + "|" + c["name"]] = {"error": type(e).__name__ + ": " + str(e)}
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
