"""The verdict rules as a pure function, over every combination of gate outcomes and caps."""

import itertools

import pytest

from kgate.record.verdict import Cap, Evidence, decide

GATES = ("PASS", "FAIL", "SKIPPED", None)
BARS = ("MET", "MISSED", "UNDECIDED", None)
CAPS = {
    "none": (),
    "advisory": (Cap("L10", "advisory", "verdict words"),),
    "inconclusive": (Cap("L01", "cap: inconclusive", "no attestation"),),
    "invalid": (Cap("L08", "invalid", "reference edited"),),
    "both": (Cap("L01", "cap: inconclusive", "x"), Cap("L05", "invalid", "y")),
}


def expected(parity, firing, integrity, bar, interpreted, reference_changed, caps):
    """The rules of the issue, written independently of the implementation."""
    if integrity != "PASS" or reference_changed or any(c.consequence == "invalid" for c in caps):
        return "invalid"
    if parity != "PASS" or firing != "PASS" or interpreted or bar not in ("MET", "MISSED"):
        return "inconclusive"
    if any(c.consequence == "cap: inconclusive" for c in caps):
        return "inconclusive"
    return "supported" if bar == "MET" else "refuted"


@pytest.mark.parametrize("caps", list(CAPS))
def test_every_combination_of_outcomes_and_caps(caps):
    for parity, firing, integrity, bar, interpreted, changed in itertools.product(
        GATES, GATES, GATES, BARS, (False, True), (False, True)
    ):
        ev = Evidence(parity, firing, integrity, bar, interpreted, changed)
        decision = decide(ev, CAPS[caps])
        assert decision.verdict == expected(parity, firing, integrity, bar, interpreted, changed, CAPS[caps]), ev
        assert decision.fired and decision.fired[0].verdict == decision.from_evidence
        applied = [c.code for c in CAPS[caps] if c.consequence != "advisory"]
        assert [r.code for r in decision.fired[1:]] == applied  # every cap that applies is listed


def test_interpreted_timings_never_support_anything():
    for parity, firing, integrity, bar in itertools.product(GATES, GATES, GATES, BARS):
        assert decide(Evidence(parity, firing, integrity, bar, True, False)).verdict != "supported"


def test_a_wrong_kernel_refutes_nothing_even_when_it_misses_the_bar():
    decision = decide(Evidence("FAIL", "PASS", "PASS", "MISSED", False, False))
    assert decision.verdict == "inconclusive" and decision.fired[0].code == "V3"
    assert "refutes nothing" in decision.fired[0].text


def test_the_lower_verdict_wins():
    ev = Evidence("PASS", "PASS", "PASS", "MET", False, False)
    assert decide(ev).verdict == "supported"
    assert decide(ev, CAPS["inconclusive"]).verdict == "inconclusive"
    assert decide(ev, CAPS["invalid"]).verdict == "invalid"
    assert decide(Evidence("PASS", "PASS", "FAIL", "MET", False, False), CAPS["inconclusive"]).verdict == "invalid"


def test_evidence_is_read_from_a_receipt():
    receipt = {"interpreted": False, "modules": {"reference": {"sha256": "a" * 64}},
               "gates": {"parity": {"status": "PASS"}, "firing": {"status": "PASS"}, "integrity": {"status": "PASS"},
                         "bar": {"status": "PASS", "outcome": "MET"}}}
    assert Evidence.from_receipt(receipt, "a" * 64) == Evidence("PASS", "PASS", "PASS", "MET", False, False)
    assert Evidence.from_receipt(receipt, "b" * 64).reference_changed
    assert Evidence.from_receipt({}, "a" * 64) == Evidence(None, None, None, None, True, True)
