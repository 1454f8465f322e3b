"""Tools that run the suite to judge something else than one target: suite power, the
kill rate of coordinator mutants (``suite_power``) and worker mutants (``worker_power``)."""
