"""Build script for the compiled parts of memplan (metadata lives in pyproject.toml).

``pip install -e .`` (or ``make venv``) compiles ``planners/_ext/_exact_search.c``,
``planners/_ext/_greedy.c`` and ``planners/_ext/_telamalloc.c`` (C99, CPython API only; need a C
compiler and the Python headers) into ``planners._exact_search``, ``planners._greedy`` and
``planners._telamalloc``. The package works without ``_greedy`` and ``_telamalloc`` (the greedy
planners and ``telamalloc``'s probe then run their Python engine).
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
            "planners._telamalloc",
            sources=["planners/_ext/_telamalloc.c"],
            depends=["planners/_ext/int64_view.h"],
            extra_compile_args=["-O2", "-std=c99"],
        ),
    ]
)
