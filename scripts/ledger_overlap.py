#!/usr/bin/env python3
"""How much of the SQLite store stands verbatim in the PostgreSQL store.

Counts host/src/ledger/sqlite.rs's substantive lines (not blank, not a comment, not lone
punctuation), with SQLite's `?N` read as PostgreSQL's `$N` and INTEGER as BIGINT, and how many
of them appear word for word anywhere in the PostgreSQL store (postgres.rs and postgres/*.rs).
With a git revision as argument, reads the files at that revision.

    python3 scripts/ledger_overlap.py            # the working tree
    python3 scripts/ledger_overlap.py 439dbd3    # before issue 20's rework
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER = "host/src/ledger"


def read(rev, path):
    if rev is None:
        file = ROOT / path
        return file.read_text() if file.exists() else ""
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout


def postgres_files(rev):
    if rev is None:
        return [f"{LEDGER}/postgres.rs"] + sorted(
            str(p.relative_to(ROOT)) for p in (ROOT / LEDGER / "postgres").glob("*.rs")
        )
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, f"{LEDGER}/"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    return [p for p in listed if p == f"{LEDGER}/postgres.rs" or p.startswith(f"{LEDGER}/postgres/")]


def substantive(text):
    lines = []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("//") or re.fullmatch(r"[{}()\[\];,.]*", line):
            continue
        lines.append(re.sub(r"\?(\d+)", r"$\1", line).replace("INTEGER", "BIGINT"))
    return lines


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    sqlite = substantive(read(rev, f"{LEDGER}/sqlite.rs"))
    postgres = set(substantive("\n".join(read(rev, p) for p in postgres_files(rev))))
    shared = sum(1 for line in sqlite if line in postgres)
    print(f"{rev or 'working tree'}: {shared} of sqlite.rs's {len(sqlite)} substantive lines stand in the PostgreSQL store")


if __name__ == "__main__":
    main()
