# The two commands a newcomer runs; each installs what it needs first.
.PHONY: test certify setup

# The test and certify commands write bytecode once, beside the venv, even where the
# environment says not to (PYTHONDONTWRITEBYTECODE): they start hundreds of Python processes
# (xdist workers, `conformance run`, `fakebroker serve`), each of which would otherwise
# recompile the project and re-rewrite every test module's assertions (pytest's collection:
# 7.7 -> 3.4 s CPU). Only there: the set-up's pip keeps compiling into the usual places.
CACHED_BYTECODE = env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/.venv/pycache

setup:
	bash .ci/setup.sh

# Run the whole test suite: two workers per core (the certifications' cases wait on real
# brokers and workers); tests of one xdist_group, such as the Spark pipeline's, stay on one
# worker. The run is bound by the two cores, not by its waits: ~1150-1250 s of CPU
# (bench/suite_cpu.py; bench/README.md, "make test").
# A Docker engine for the container tests (tests/containers) runs beside them where the
# machine allows it: started here when none answers, stopped after, no container left behind
# (.ci/docker-engine.sh; without one those tests are skipped and say why).
test: setup
	bash .ci/docker-engine.sh run $(CACHED_BYTECODE) .venv/bin/python -m pytest -n $$(( 2 * $$(nproc) )) --dist loadgroup

# The main job: certify the bundled implementations and write the report under reports/.
# Three targets at a time, longest first (their cases mostly wait on real time: one after
# another the two cores sat mostly idle, 621 s quiet). All eight certified this way in three
# runs: 383 s at load 11-17, 278 s and 267 s at 4-15; 219.7 s quiet with the worker host
# (bench/README.md, "make certify").
certify: setup
	$(CACHED_BYTECODE) .venv/bin/conformance run --jobs 3 --target fixtures/targets/kafka-python-worker.toml --target fixtures/targets/apache-kafka.toml --target fixtures/targets/apache-connect-compatible.toml --target fixtures/targets/apache-connect-sessioned.toml --target fixtures/targets/draft-worker.toml --target fixtures/targets/apache-connect-eager.toml --target fixtures/targets/fakebroker-group-log.toml --target fixtures/targets/fakebroker.toml --reports reports
