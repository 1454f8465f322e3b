"""The testing surface: scripted clients on ``fakebroker.client`` that record what they
exchange in the one transcript format. Golden generation, the differential scenarios
against the real Kafka and the conformance harness are its clients; it sits above the
server and the script package and nothing below imports it.
"""
