# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-full venv bytecode clean

$(STAMP): pyproject.toml constraints.txt
	@echo "== make: creating or refreshing $(VENV) (jax, numpy, scipy, typer, rich; torch (CPU), triton; ray; pytest, pytest-xdist, jsonschema), versions from constraints.txt"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,torch,ray]'
	touch $(STAMP)

venv: $(STAMP)

# kgate's own modules compiled to bytecode (a second each time; only what changed is remade):
# where PYTHONDONTWRITEBYTECODE is set Python writes none, and every kgate process, each CLI call
# and fork server of the suite, would compile them from source again. The problem's modules are
# never run from bytecode in a leg (kgate.verify.leg.never_trust_bytecode).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q src

# Each part says what it does and how long it took.
define timed
	@echo "== make $(1): $(2)"; start=$$(date +%s); $(3); rc=$$?; \
	echo "== make $(1): $(2): $$(( $$(date +%s) - start )) s"; exit $$rc
endef

demo: bytecode
	$(call timed,demo,the gates on the bundled examples,bash examples/demo.sh)
	$(call timed,demo,an experiment record from stub to ledger,bash examples/records_demo.sh)
	$(call timed,demo,a record filed to a verdict and its report,bash examples/verdict_demo.sh)
	$(call timed,demo,the whole loop as the author skill orders it: a pivot; a gotcha; a sweep; a verdict,bash examples/loop_demo.sh)

# The suite runs on as many pytest-xdist workers as the machine has cores; a file's tests stay on one
# worker (--dist loadfile): its module fixtures (records, receipts) are built once, and its racing
# examples never meet another file's.
#   make test       the tests that are quick to run: every pure rule, known-good and known-bad
#                   cases of each gate, and at least one hostile candidate of each class in
#                   ../shared/HACKS.md, end to end (minutes on 2 cores; CI runs this)
#   make test-full  every test: the rest of the hostile catalogue, whole suites, sweeps, demos and the
#                   CLI end to end (marked `full`), then the tests whose outcome is a measured speed
#                   (marked `timing`), one at a time: a neighbour on the other core would only widen
#                   their intervals (most of an hour on 2 cores; run it before merging a change to a gate)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST := $(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile --durations=15

test: bytecode
	$(call timed,test,the quick tier (pytest-xdist workers: $(JOBS); make test-full runs every test),$(PYTEST) -m "not full and not timing")

test-full: bytecode
	$(call timed,test-full,every test but the timed ones (pytest-xdist workers: $(JOBS)),$(PYTEST) -m "not timing")
	$(call timed,test-full,the tests whose outcome is a measured speed; one at a time,$(BIN)/python -m pytest -q -m timing)

clean:
	rm -rf $(VENV) build src/*.egg-info
