#!/usr/bin/env python3
"""The counts in the summary `elfhook run` prints on stderr (its headline is wrapped at commas):

  summary.py FILE   →   http=N opened=N accepted=N dns=N dropped=N records=N

records = http + opened + accepted + dns: the records elfhook received. Exits 1 when FILE holds
no summary."""
import re
import sys

text = open(sys.argv[1], errors="replace").read()
start = re.search(r"^elfhook: [\d,]+ HTTP request", text, re.M)
if not start:
    sys.exit(1)
headline = text[start.start():].split("\n\n")[0].replace("\n", " ")


def count(pattern, where=headline):
    match = re.search(r"([\d,]+) " + pattern, where)
    return int(match.group(1).replace(",", "")) if match else 0


values = {
    "http": count(r"HTTP requests?"),
    "opened": count(r"connections? opened"),
    "accepted": count(r"accepted"),
    "dns": count(r"DNS lookups?"),
    "dropped": count(r"records were dropped", text),
}
values["records"] = values["http"] + values["opened"] + values["accepted"] + values["dns"]
print(" ".join(f"{key}={value}" for key, value in values.items()))
