#!/usr/bin/python3
"""A small "coding agent" in python: works on its workspace (the working
directory) the way an agent does, and reports what it saw.

  data.csv          read; totals per category written to summary.json
  db.sqlite         created with the rows (sqlite3 in the workspace)
  src/app.py        patched in place (a version string bumped)
  tmp work          tempfile under TMPDIR, then a subprocess (sh, sort)
"""
import csv
import json
import os
import sqlite3
import subprocess
import tempfile

totals = {}
rows = []
with open("data.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        rows.append((row["category"], int(row["amount"])))
        totals[row["category"]] = totals.get(row["category"], 0) + int(row["amount"])

db = sqlite3.connect("db.sqlite")
db.execute("create table items (category text, amount integer)")
db.executemany("insert into items values (?, ?)", rows)
db.commit()
(count,) = db.execute("select count(*) from items").fetchone()
db.close()

with open("src/app.py") as fh:
    source = fh.read()
with open("src/app.py", "w") as fh:
    fh.write(source.replace('VERSION = "1.0"', 'VERSION = "1.1"'))

with tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt") as tmp:
    tmp.write("\n".join(sorted(totals)) + "\n")
sorted_out = subprocess.run(["/bin/sh", "-c", "sort -r \"$1\"", "sh", tmp.name],
                            capture_output=True, text=True, check=True).stdout.split()
os.unlink(tmp.name)

with open("summary.json", "w") as fh:
    json.dump({"totals": totals, "rows_in_db": count, "reverse_categories": sorted_out,
               "tmp_dir": os.path.dirname(tmp.name), "uid": os.getuid(),
               "cwd": os.getcwd()}, fh, indent=2, sort_keys=True)
    fh.write("\n")
print("python agent done: %d rows" % count)
