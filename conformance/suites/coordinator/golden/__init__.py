"""Golden transcripts, the coordinator suite's recorded cases: a scenario per transcript the
catalogue lists (``classic_*``, ``draft``; registered by catalogue id in ``registry``), run on
a virtual-clock fake broker (``session``), annotated with matchers (``annotate``) and written
under fixtures/golden (``generate``, ``conformance golden``)."""
