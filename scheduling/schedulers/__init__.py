"""Operator schedulers: choose the order in which a graph's operators run.

>>> from scheduling.examples import seed000_graph
>>> from scheduling.schedulers import schedule
>>> s = schedule(seed000_graph(), "file_order")
>>> s.scheduler, len(s.order), s.info["peak_bytes"], s.bound
('file_order', 6, 20480, 20480)
>>> s.status  # the order lower bound proves the file order optimal here
'optimal'
"""

from .base import (
    SCHEDULE_STATUSES,
    FunctionScheduler,
    Schedule,
    Scheduler,
    ScheduleResult,
    check_schedule,
    is_valid_schedule,
)
from .file_order import FileOrder
from .registry import SCHEDULERS, available_schedulers, get_scheduler, schedule

from . import catalogue as _catalogue  # isort: skip
from . import registry as _registry  # isort: skip

_catalogue.bind(_registry)  # scheduler modules look names up here, never in the registry

__all__ = [
    "Schedule",
    "ScheduleResult",
    "Scheduler",
    "FunctionScheduler",
    "SCHEDULE_STATUSES",
    "check_schedule",
    "is_valid_schedule",
    "FileOrder",
    "SCHEDULERS",
    "available_schedulers",
    "get_scheduler",
    "schedule",
]
