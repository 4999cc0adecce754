"""Kubernetes: a Plan becomes a JobSet (kubernetes-sigs/jobset), submitted with the official client.

The rooms: ``settings`` (the ``kubernetes:`` spec section), ``render`` (the JobSet,
pure), ``emulate`` (the pods JobSet would start and the environment each one sees),
``clients`` (the ``kubernetes`` client: configuration, retries, error translation),
``job`` (submit, attach, status, logs, cancel, list) and ``setup_checks`` (what the
first submit needs). The ``kubernetes`` library is imported inside ``clients`` only.
"""
