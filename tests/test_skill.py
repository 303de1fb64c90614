"""The author-kernel skill: every `kgate ...` it names exists with the flags it names, and the
commit grammar it quotes is the one the records enforce."""

import re
from pathlib import Path

import typer

from kgate.cli import app
from kgate.record.commits import GRAMMARS

SKILL = Path(__file__).resolve().parent.parent / ".claude" / "skills" / "author-kernel" / "SKILL.md"


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


def invocations(text: str) -> list[str]:
    """Each `kgate ...` in an inline code span, up to the span's end (a span may wrap a line)."""
    spans = re.findall(r"`([^`]+)`", text)
    return [" ".join(span.split()) for span in spans if span.strip().startswith("kgate ")]


def test_the_skill_has_agent_front_matter():
    text = SKILL.read_text()
    front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert front, "the skill starts with front-matter"
    assert re.search(r"^name: author-kernel$", front.group(1), re.M)
    assert re.search(r"^description: .{40,}$", front.group(1), re.M)


def test_every_command_and_flag_the_skill_names_exists():
    known = commands()
    named = invocations(SKILL.read_text())
    assert len(named) >= 15, named  # the skill points its rules at commands
    problems = []
    for call in named:
        words = call.split()[1:]
        path = " ".join(words[:2]) if " ".join(words[:2]) in known else words[0]
        if path not in known:
            problems.append(f"{call}: no command {path!r}")
            continue
        for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", " ".join(words[len(path.split()):])):
            if flag not in known[path]:
                problems.append(f"{call}: {path} has no {flag}")
    assert problems == []


def test_the_commit_grammar_the_skill_quotes_is_the_one_enforced():
    quoted = re.search(r"grammar `(\^cand[^`]+)`", SKILL.read_text())
    assert quoted and quoted.group(1) == GRAMMARS["cand"].pattern
