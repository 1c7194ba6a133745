"""Code says what it does and why, never which ticket asked for it: no
source, test, script, style or image file refers to an issue or ticket by
number (the history of a change belongs in its commit message)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: the word, a number after it (optionally "#"): as written in any case
TICKET = re.compile(r"\b(?:issue|ticket)s?\s*#?\d+", re.IGNORECASE)
SUFFIXES = {".py", ".ts", ".tsx", ".js", ".css", ".sh", ".yaml", ".yml", ".toml", ".json",
            ".html", ".cfg", ".ini"}
NAMES = {"Dockerfile", "Makefile"}
#: built or vendored, not written here
SKIP = ("labextension/lib/", "labextension/jupyterlab_hubgrid/labextension/",
        "quota_service/console_static/", "node_modules/", "package-lock.json")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [p for p in out if p and not p.startswith(SKIP) and "/node_modules/" not in p
            and (Path(p).suffix in SUFFIXES or Path(p).name in NAMES or p.startswith(
                "spawner/scripts/") or p.startswith("images/") and "." not in Path(p).name)]


def refs(text: str) -> list[str]:
    return [m.group(0) for m in TICKET.finditer(text)]


def test_the_pattern_finds_what_it_must_and_nothing_else():
    i, t = "issue", "ticket"  # spelt apart: this file is scanned too
    assert refs(f"the console ({i} #19) and ({i.title()} 23, part 2); {t} 7") == [
        f"{i} #19", f"{i.title()} 23", f"{t} 7"]
    assert refs("an issue with #2951 upstream; issues are listed; tissue 3") == []


def test_no_file_points_at_a_ticket_number():
    files = tracked()
    assert len(files) > 200  # the listing found the code
    found = []
    for p in files:
        path = REPO / p
        if not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if refs(line):
                found.append(f"{p}:{lineno}: {line.strip()[:100]}")
    assert found == []
