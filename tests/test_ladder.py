"""The cost ladder's rules (record/ladder.py), without git or a framework: which climbs are backed."""

from pathlib import Path

import pytest

from kgate.errors import KgateError
from kgate.record import ladder
from kgate.record.summary import ReportSummary

BAR = "speedup > 1.5x"


def summary(command="measure", bar=BAR, outcome="MISSED", status="FAIL", interpreted=False):
    gates = {"parity": {"status": "PASS", "checks": []}}
    if outcome is not None:
        gates["bar"] = {"status": "FAIL" if outcome == "MISSED" else "PASS", "checks": [], "bar": bar, "outcome": outcome}
    return ReportSummary.from_json({"command": command, "status": status, "gates": gates, "interpreted": interpreted},
                                   Path("r.json"), "0" * 64)


def test_a_transition_climbs_two_rungs_of_the_ladder():
    assert ladder.parse("xla-rewrite->kernel-authored") == ("xla-rewrite", "kernel-authored")
    assert ladder.parse("flag → xla-rewrite") == ("flag", "xla-rewrite")
    for bad, said in [("kernel-authored->flag", "does not climb"), ("flag->flag", "does not climb"),
                      ("flag->kernel-authored", "skips the xla-rewrite rung"),
                      ("refute->flag", "is not FROM->TO"), ("xla-rewrite", "is not FROM->TO")]:
        with pytest.raises(KgateError, match=said):
            ladder.parse(bad)
    with pytest.raises(KgateError) as skipped:
        ladder.parse("flag->kernel-authored")
    assert "an xla-rewrite candidate that misses the bar first" in skipped.value.fix  # never "a xla-rewrite"


def test_only_a_miss_of_the_registered_bar_by_the_cheaper_class_backs_a_climb():
    missed = ladder.Earlier("cand1", "xla-rewrite", summary())
    assert ladder.unbacked("xla-rewrite", BAR, [missed]) is None
    assert ladder.unbacked("xla-rewrite", "speedup  >  1.5x", [missed]) is None  # spacing is not a different bar
    cases = {
        "undecided": (ladder.Earlier("cand1", "xla-rewrite", summary(outcome="UNDECIDED")), "bar UNDECIDED"),
        "another bar": (ladder.Earlier("cand1", "xla-rewrite", summary(bar="speedup > 90x")), "graded another bar"),
        "no bar": (ladder.Earlier("cand1", "xla-rewrite", summary(command="gate", outcome=None)), "graded no bar"),
        "no receipt": (ladder.Earlier("cand1", "xla-rewrite", None), "no receipt"),
        "another class": (ladder.Earlier("cand1", "flag", summary()), "no earlier candidate of class xla-rewrite"),
        "interpreted": (ladder.Earlier("cand1", "xla-rewrite", summary(interpreted=True)), "interpreter timings"),
    }
    for name, (earlier, said) in cases.items():
        why = ladder.unbacked("xla-rewrite", BAR, [earlier])
        assert why is not None and said in why, (name, why)
    assert ladder.unbacked("xla-rewrite", None, [missed]) is not None  # no registered bar: nothing was missed
    # a flag is timed against its absence only by `kgate flags`: a measure report's miss does not count
    assert "comes from `kgate flags`" in ladder.unbacked("flag", BAR, [ladder.Earlier("cand1", "flag", summary())])
    assert ladder.unbacked("flag", BAR, [ladder.Earlier("cand1", "flag", summary(command="flags"))]) is None


def test_climbs_are_found_recorded_or_not():
    mark = ladder.mark("xla-rewrite", "kernel-authored", "XLA (already) fuses it")
    assert mark == "(escalated xla-rewrite→kernel-authored: XLA [already] fuses it)"
    rows = [("cand1", "xla-rewrite", "rejected"), ("cand2", "kernel-authored", f"kept {mark}"),
            ("cand3", "kernel-authored", "kept"), ("cand4", "flag", "a cheaper baseline")]
    assert ladder.climbs("xla-rewrite", rows) == [(1, "cand2", "xla-rewrite")]
    assert ladder.climbs("flag", [("cand1", "kernel-authored", "kept")]) == [(0, "cand1", None)]
    forged = ladder.mark("flag", "xla-rewrite", "typed by hand")  # a mark for another rung than the row's class
    assert ladder.climbs("xla-rewrite", [("cand1", "kernel-authored", f"kept {forged}")]) == [(0, "cand1", None)]
    assert ladder.climbs("kernel-authored", [("cand1", "xla-rewrite", "baseline"), ("cand2", "kernel-authored", "k")]) == []
