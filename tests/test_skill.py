"""The agent skills (author-kernel, verify-kernel), the loop page, every docs page and the README:
every `kgate ...` they name exists with the flags they name, and the commit grammar quoted is the
one the records enforce."""

import re
from pathlib import Path

import pytest
import typer

from kgate.cli import app
from kgate.record.commits import GRAMMARS

SKILLS = Path(__file__).resolve().parent.parent / ".claude" / "skills"
SKILL = SKILLS / "author-kernel" / "SKILL.md"
ALL = sorted(SKILLS.glob("*/SKILL.md"))


def commands() -> dict[str, set[str]]:
    """Every command path ("gate", "family new") and its option strings."""
    found: dict[str, set[str]] = {}

    def walk(command, prefix):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*prefix, name])
        else:
            found[" ".join(prefix)] = {o for p in command.params for o in [*getattr(p, "opts", []),
                                                                           *getattr(p, "secondary_opts", [])]}

    walk(typer.main.get_command(app), [])
    return found


def _split(snippet: str) -> list[str]:
    """A command line cut at `;`, `|`, `&&` and `||`, except inside (...) or [...] (a usage
    synopsis's alternatives: `(--reference R | --family SLUG)`)."""
    parts, current, depth, i = [], "", 0, 0
    while i < len(snippet):
        ch = snippet[i]
        depth += ch in "([" 
        depth -= ch in ")]" and depth > 0
        if depth == 0 and snippet.startswith(("&&", "||"), i):
            parts, current, i = [*parts, current], "", i + 2
            continue
        if depth == 0 and ch in ";|":
            parts, current, i = [*parts, current], "", i + 1
            continue
        current, i = current + ch, i + 1
    return [p.strip() for p in [*parts, current]]


def invocations(text: str) -> list[str]:
    """Each `kgate ...` the text names: in an inline code span (a span may wrap a line) or in a
    fenced block: a transcript's typed lines (after `$ `, with `\\` continuations), or a usage
    synopsis (a line that starts with `kgate`, with the indented lines under it)."""
    calls: list[str] = []

    def take(snippet: str) -> None:
        for part in _split(" ".join(snippet.split())):
            word = part.split()[1] if part.startswith("kgate ") else ""
            if word and not word.endswith(":") and word not in ("...", "…", "…`"):  # not a heading or "kgate …"
                calls.append(part)

    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
    for block in fenced.findall(text):
        lines = block.replace("\\\n", " ").splitlines()
        if any(line.strip().startswith("$ ") for line in lines):  # a transcript: only what was typed
            for line in lines:
                if line.strip().startswith("$ "):
                    take(line.strip()[2:])
            continue
        current: str | None = None
        for line in [*lines, ""]:
            if line.strip().startswith("kgate "):
                if current:
                    take(current)
                current = line
            elif current is not None and line[:1].isspace() and line.strip():
                current += " " + line.strip()  # a synopsis's continued options
            else:
                if current:
                    take(current)
                current = None
    for span in re.findall(r"`([^`\n]+(?:\n[^`\n]+)?)`", fenced.sub("", text)):
        take(span)
    return calls


def unknown(call: str, known: dict[str, set[str]]) -> list[str]:
    """What a `kgate ...` call names that the CLI lacks: its command, or each flag."""
    words = call.split()[1:]
    if not words or words[0].startswith("-"):
        return [f"{call}: {flag}" for flag in words[:1] if flag not in ("--help", "--version", "--install-completion", "--show-completion")]
    path = " ".join(words[:2]) if " ".join(words[:2]) in known else words[0]
    if path not in known:
        return [f"{call}: no command {path!r}"]
    own = words[len(path.split()):]
    own = own[:own.index("--")] if "--" in own else own  # after a lone --: the command `kgate lock` runs
    flags = re.findall(r"(?<![\w=-])(--?[a-z][a-z0-9-]*)", " ".join(own))
    return [f"{call}: {path} has no {flag}" for flag in flags if flag not in known[path] | {"--help"}]


def test_both_skills_exist_with_agent_front_matter():
    assert [p.parent.name for p in ALL] == ["author-kernel", "verify-kernel"]
    for path in ALL:
        front = re.match(r"^---\n(.*?)\n---\n", path.read_text(), re.S)
        assert front, f"{path} starts with front-matter"
        assert re.search(rf"^name: {path.parent.name}$", front.group(1), re.M)
        assert re.search(r"^description: .{40,}$", front.group(1), re.M)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_every_command_and_flag_a_skill_names_exists(path):
    known = commands()
    named = invocations(path.read_text())
    assert len(named) >= 8, named  # the skill points its rules at commands
    assert [problem for call in named for problem in unknown(call, known)] == []


ROOT = SKILLS.parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_and_flag_a_docs_page_names_exists(path):
    known = commands()
    assert [problem for call in invocations(path.read_text()) for problem in unknown(call, known)] == []


def test_the_extractor_sees_fenced_blocks_and_spans_and_catches_what_is_missing():
    text = ("Run `kgate gate -r a.py --bogus`.\n\n```\n$ kgate nosuch \\\n  --x 1 | head\n$ kgate lint --json\n"
            "kgate gate: PASS\n```\n\n```\nkgate cand SLUG candN (--what W | --abandon)\n           [--nope X]\n```\n")
    calls = invocations(text)
    assert calls == ["kgate nosuch --x 1", "kgate lint --json", "kgate cand SLUG candN (--what W | --abandon) [--nope X]",
                     "kgate gate -r a.py --bogus"]
    assert [p for c in calls for p in unknown(c, commands())] == [
        "kgate nosuch --x 1: no command 'nosuch'", "kgate cand SLUG candN (--what W | --abandon) [--nope X]: cand has no --nope",
        "kgate gate -r a.py --bogus: gate has no --bogus"]
    # after a lone --, the words are the command kgate lock runs, not kgate's flags; before it they are
    assert unknown("kgate lock 0 --json -- sh -c 'exit 3'", commands()) == []
    assert unknown("kgate lock 0 --nope -- sh -c 'exit 3'", commands()) == ["kgate lock 0 --nope -- sh -c 'exit 3': lock has no --nope"]


def test_the_commit_grammar_the_skill_quotes_is_the_one_enforced():
    quoted = re.search(r"grammar `(\^cand[^`]+)`", SKILL.read_text())
    assert quoted and quoted.group(1) == GRAMMARS["cand"].pattern
