"""What the sweep configuration (:mod:`experiments.sweep.config`) and the provenance of its runs
(:mod:`experiments.sweep.provenance`) share: the error of a configuration that cannot run and the
SHA-256 digests of run keys and code versions.

:mod:`~experiments.sweep.config` computes code versions with :mod:`~experiments.sweep.provenance`,
so provenance reads these names here, not in the configuration module
(``tests/test_import_cycles.py``); :mod:`~experiments.sweep.config` re-exports :class:`ConfigError`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from planners.errors import MemplanError

__all__ = ["ConfigError", "digest_bytes", "digest_obj"]


class ConfigError(MemplanError, ValueError):
    """A sweep configuration that cannot run: unknown planner, scheduler or workload, a parameter
    the planner does not have, an empty or nested grid, a missing file or a glob matching nothing.
    Raised by :func:`parse_config` before anything runs; the message names the key and the rule."""


def digest_bytes(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lowercase hex digits.

    Parameters
    ----------
    data : bytes

    Returns
    -------
    str
    """
    return hashlib.sha256(data).hexdigest()


def digest_obj(obj: Any) -> str:
    """:func:`digest_bytes` of ``obj`` as JSON with sorted keys (``str`` for what JSON cannot
    hold), so equal dicts in any key order have one digest.

    Parameters
    ----------
    obj : JSON-like object

    Returns
    -------
    str
        64 lowercase hex digits.

    Examples
    --------
    >>> digest_obj({"a": 1, "b": 2}) == digest_obj({"b": 2, "a": 1})
    True
    """
    return digest_bytes(json.dumps(obj, sort_keys=True, default=str).encode())
