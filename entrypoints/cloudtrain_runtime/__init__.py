"""The cloudtrain container runtime."""
