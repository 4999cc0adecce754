"""Placement: get the run started where the GPUs are.

A spec's ``placement:`` section (``cloudtrain.candidates``) names where a run may start.
This package resolves each candidate into a plan of its own (``resolve``: the provider,
the region, the shape, the spec's global batch and learning rate held), reads the quotas
each needs before anything is sent (``preflight``), orders the candidates (as listed, or
by estimated cost), and tries them until one starts (``failover``), recording every
attempt of the run (``trail``).

Whatever stops a candidate is read in the providers' shared words
(``cloudtrain.provider.failures``): a capacity failure blocks that region for that shape
and moves on, a quota skips the candidate, a permission failure blocks the provider, and
a configuration or user-code failure stops the placement at once: a broken trainer is
never sent elsewhere to fail again.
"""
