"""Build script for the compiled parts of memplan (metadata lives in pyproject.toml).

``pip install -e .`` (or ``make venv``) compiles ``planners/_ext/_exact_search.c``,
``planners/_ext/_greedy.c``, ``planners/_ext/_validate.c``, ``planners/_ext/_telamalloc.c`` and
``scheduling/_ext/_budget.c`` (C99, CPython API only; need a C compiler and the Python headers)
into ``planners._exact_search``, ``planners._greedy``, ``planners._validate``,
``planners._telamalloc`` and ``scheduling._budget``. The package works without ``_greedy``,
``_validate``, ``_telamalloc`` and ``_budget`` (the greedy planners, the validator's overlap
test, ``telamalloc``'s probe and the order decision's flows and budget search then run their
Python engine).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "planners._exact_search",
            sources=["planners/_ext/_exact_search.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "planners._greedy",
            sources=["planners/_ext/_greedy.c"],
            depends=["planners/_ext/int64_view.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "planners._validate",
            sources=["planners/_ext/_validate.c"],
            depends=["planners/_ext/int64_view.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "planners._telamalloc",
            sources=["planners/_ext/_telamalloc.c"],
            depends=["planners/_ext/int64_view.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
        Extension(
            "scheduling._budget",
            sources=["scheduling/_ext/_budget.c"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
    ]
)
