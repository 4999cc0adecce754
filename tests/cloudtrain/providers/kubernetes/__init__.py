"""Tests of ``cloudtrain.providers.kubernetes``."""
