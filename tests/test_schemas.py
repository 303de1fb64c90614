"""The published schemas (schemas/*.schema.json) are tight: each rejects the documents a
script must never be handed. (That every document kgate produces in this suite matches its
schema is checked for every test, in conftest.)"""

import json

import pytest

from conftest import ROOT
from kgate.jsonio import schema_errors

CHECK = {"name": "seed42.out", "status": "PASS", "detail": "max-abs 0"}


def report(**over):
    doc = {"schema": 1, "kgate_version": "0", "command": "gate", "status": "PASS", "exit_code": 0,
           "gates": {"parity": {"status": "PASS", "checks": [CHECK], "spec": "floor", "seeds": [42],
                                "probes": [{"name": "seed42", "outputs": []}]}},
           "advisories": [], "next_step": "go on"}
    return {**doc, **over}


def test_every_schema_is_a_valid_draft_2020_12_schema_with_its_own_id():
    import jsonschema

    names = sorted(p.name for p in (ROOT / "schemas").glob("*.schema.json"))
    assert {"report-v1.schema.json", "receipt-v1.schema.json", "error-v1.schema.json", "lint-v1.schema.json",
            "verify-receipt-v1.schema.json", "verdict-v1.schema.json"} <= set(names)
    for name in names:
        schema = json.loads((ROOT / "schemas" / name).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$id"].endswith("/" + name)


def test_a_good_report_passes_and_an_inconsistent_one_does_not():
    assert schema_errors(report(), "report") == []
    assert schema_errors(report(status="FAIL", exit_code=0), "report")  # a FAIL that exits 0
    assert schema_errors(report(exit_code=1), "report")  # "advisories" exit without one
    assert schema_errors(report(command="verify"), "report")  # verify's report names its receipt
    assert schema_errors(report(status="ANOMALY", exit_code=2), "report")  # an anomaly is an integrity FAIL
    failed_but_passing = report()
    failed_but_passing["gates"]["parity"]["checks"] = [{**CHECK, "status": "FAIL"}]
    assert any("parity" in e for e in schema_errors(failed_but_passing, "report"))
    empty_gate = report()
    empty_gate["gates"]["firing"] = {"status": "PASS", "checks": []}  # a gate that checked nothing never passes
    assert schema_errors(empty_gate, "report")


@pytest.mark.parametrize("doc", [
    {"status": "ERROR", "exit_code": 1, "error": {"problem": "p", "fix": "f"}},
    {"status": "ERROR", "exit_code": 2, "error": {"problem": "p"}},
    {"status": "ERROR", "exit_code": 2, "error": {"problem": "", "fix": "f"}},
])
def test_an_error_always_exits_2_and_says_the_problem_and_the_fix(doc):
    assert schema_errors(doc, "error")
    assert schema_errors({"status": "ERROR", "exit_code": 2, "error": {"problem": "p", "fix": "f"}}, "error") == []


def test_lint_and_verify_receipt_statuses_match_their_exit_codes():
    finding = {"code": "L09", "title": "t", "evidence": "e", "fix": "f", "consequence": "advisory"}
    assert schema_errors({"experiment": "x v001", "status": "ADVISORY", "exit_code": 1, "findings": [finding]}, "lint") == []
    assert schema_errors({"experiment": "x v001", "status": "CLEAN", "exit_code": 0, "findings": [finding]}, "lint")
    assert schema_errors({"experiment": "x v001", "status": "CAPPED", "exit_code": 1, "findings": [finding]}, "lint")
    ok = {"command": "verify-receipt", "receipt": "r.json", "status": "OK", "exit_code": 0, "findings": [], "checked": {}}
    assert schema_errors(ok, "verify-receipt") == []
    assert schema_errors({**ok, "status": "TAMPERED"}, "verify-receipt")  # exit 0 and no finding
    iv = {"estimate": 1.5, "low": 1.2, "high": 1.8, "level": 0.95}
    side = {"path": "a.json", "candidate": "c.py", "candidate_sha256": "0" * 64, "status": "PASS", "speedup": iv,
            "sessions": 3, "reference_p50_ms": iv, "candidate_p50_ms": iv}
    compared = {"command": "compare", "status": "COMPARED", "exit_code": 0, "problem": {
        "reference": "r.py", "reference_sha256": "0" * 64, "op_point": {}, "device": {}}, "a": side, "b": side,
        "ratio": iv, "faster": "A", "verdict": "A's candidate is faster", "reference_ratio": iv, "method": "m",
        "advisories": []}
    assert schema_errors(compared, "compare") == []
    assert schema_errors({**compared, "exit_code": 1}, "compare")  # an advisory exit with no advisory
    assert schema_errors({**compared, "faster": "C"}, "compare")
    assert schema_errors({**compared, "a": {**side, "sessions": 1}}, "compare")  # one session cannot be compared


def test_the_suite_wide_check_logs_a_document_that_breaks_its_schema(tmp_path, monkeypatch):
    from kgate.jsonio import SCHEMA_CHECK_ENV, check_schema, document

    log = tmp_path / "violations.jsonl"
    monkeypatch.setenv(SCHEMA_CHECK_ENV, str(log))
    text = document({"status": "ERROR", "exit_code": 1, "error": {"problem": "p", "fix": "f"}}, "error")
    assert json.loads(text)["exit_code"] == 1  # the output itself is never changed
    check_schema({"status": "ERROR", "exit_code": 2, "error": {"problem": "p", "fix": "f"}}, "error")
    (line,) = log.read_text().splitlines()
    assert json.loads(line)["kind"] == "error" and "exit_code" in json.loads(line)["problem"]


def test_the_author_report_document_keeps_the_command_status_apart_from_the_pages():
    doc = {"status": "DONE", "exit_code": 0, "command": "report", "experiment": "v001-rmsnorm",
           "experiment_status": "open", "verdict": None, "ledger": {"loaded": None, "rows": []}, "final": None,
           "escalations": [], "blockers": [], "compliance": "activity optimization", "findings": [],
           "speedups": [{"candidate": "cand1", "estimate": 1.2, "low": 1.1, "high": "inf", "interpreted": True,
                         "predicted": None}],
           "verdict_section": None, "samples_ms": None, "verify_interpreted": None, "leads": []}
    assert schema_errors(doc, "author-report") == []
    assert schema_errors({**doc, "status": "open"}, "author-report")  # the page's status is experiment_status
    assert schema_errors({**doc, "speedups": [{**doc["speedups"][0], "interpreted": "no"}]}, "author-report")
    missing = dict(doc)
    del missing["blockers"]
    assert schema_errors(missing, "author-report")
