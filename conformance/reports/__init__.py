"""What a run leaves behind: the certificate and its verdict (``certificate``), the Allure
results (``allure_support``), JUnit XML (``junit``), the signed attestation
(``attestation``), where the certificate comes from (``provenance``), the run's
``results.json`` (``results_file``) and the calibration brokers' expected outcomes
(``expected``). Above the harness, whose outcomes it reports; below the CLI."""
