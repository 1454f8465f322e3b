"""Golden transcripts: the rules of the classic group APIs (``catalogue``), a scenario per
rule (``scenarios``), run on a virtual-clock fake broker (``session``), annotated with
matchers (``annotate``) and written under fixtures/golden (``generate``)."""
