"""The runtime's exceptions: each one names what was wrong and how to fix it.

Only ``main`` turns them into one ``error:`` line on stderr and an exit code, so the
rest of the runtime raises and never prints or exits.
"""

from __future__ import annotations


class RuntimeFailure(Exception):
    """Base of every error the runtime raises on purpose."""

    exit_code = 1


class ConfigError(RuntimeFailure):
    """The runtime configuration is missing, malformed or impossible on this cluster."""

    exit_code = 2


class ClusterError(RuntimeFailure):
    """The environment describes a cluster the runtime cannot join."""

    exit_code = 2


class UserCodeError(RuntimeFailure):
    """The user's module or script broke the contract or raised; the message names the file."""

    exit_code = 1


class PeerLost(RuntimeFailure):
    """Another replica of the job died or stopped answering; the job must restart."""

    exit_code = 1
