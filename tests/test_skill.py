"""The agent skills (author-kernel, verify-kernel): every `kgate ...` they name exists with the
flags they name, and the commit grammar quoted is the one the records enforce."""

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


def invocations(text: str) -> list[str]:
    """Each `kgate ...` in an inline code span, up to the span's end (a span may wrap a line)."""
    spans = re.findall(r"`([^`]+)`", text)
    return [" ".join(span.split()) for span in spans if span.strip().startswith("kgate ")]


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
