# Reference renders of prompt strings for kvcheck's test that the static scanner places each
# placeholder where rendering puts it: Python renders the prompt as the application would
# (str.format, Jinja, %-formatting or string.Template), twice, with the placeholder given two
# values and every other placeholder the empty string, and returns the text before the first
# difference.
#
# usage: prompt_render.py PROMPTS.json > prefixes.json
# PROMPTS.json: [{"id": ..., "text": ..., "style": "format"|"jinja"|"percent"|"dollar",
#                 "target": NAME, "names": [NAME...]}]
# The output maps each id to {"prefix": ...} or {"error": ...} (a prompt the application fills
# with something kvcheck's test does not pass, such as an object's attribute).
import json
import string
import sys

import jinja2

def render(p, value):
    values = {n: "" for n in p["names"]}
    values[p["target"]] = value
    style = p["style"]
    if style == "format":
        return string.Formatter().vformat(p["text"], (), values)
    if style == "jinja":
        return jinja2.Environment(undefined=jinja2.Undefined).from_string(p["text"]).render(**values)
    if style == "percent":
        return p["text"] % values
    if style == "dollar":
        return string.Template(p["text"]).safe_substitute(values)
    raise ValueError("unknown style " + style)

out = {}
for p in json.load(open(sys.argv[1], encoding="utf-8")):
    try:
        a, b = render(p, "alpha"), render(p, "omega")
    except Exception as e:
        out[p["id"]] = {"error": type(e).__name__ + ": " + str(e)}
        continue
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    out[p["id"]] = {"prefix": a[:i]}
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
