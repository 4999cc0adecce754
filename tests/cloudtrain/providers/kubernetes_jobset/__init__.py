"""Tests of ``cloudtrain.providers.kubernetes``.

The folder is not named ``kubernetes``: pytest puts ``tests/cloudtrain/providers`` on
``sys.path``, where a package of that name would hide the ``kubernetes`` client itself.
"""
