# The two commands a newcomer runs; each installs what it needs first.
.PHONY: test certify setup

setup:
	bash .ci/setup.sh

# Run the whole test suite: two workers per core (the suite mostly waits on real brokers,
# workers and timeouts: on two cores, two workers kept 0.4-1.3 of them busy); tests of one
# xdist_group, such as the Spark pipeline's, stay on one worker.
test: setup
	.venv/bin/python -m pytest -n $$(( 2 * $$(nproc) )) --dist loadgroup

# The main job: certify the bundled implementations and write the report under reports/.
certify: setup
	.venv/bin/conformance run --target fixtures/targets/fakebroker.toml --target fixtures/targets/apache-kafka.toml --target fixtures/targets/fakebroker-group-log.toml --target fixtures/targets/kafka-python-worker.toml --target fixtures/targets/draft-worker.toml --target fixtures/targets/apache-connect-eager.toml --target fixtures/targets/apache-connect-compatible.toml --target fixtures/targets/apache-connect-sessioned.toml --reports reports
