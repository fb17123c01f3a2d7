"""Build script for the compiled parts of memplan (metadata lives in pyproject.toml).

``pip install -e .`` (or ``make venv``) compiles ``planners/_ext/_exact_search.c`` and
``planners/_ext/_greedy.c`` (C99, CPython API only; need a C compiler and the Python headers) into
``planners._exact_search`` and ``planners._greedy``. The package works without ``_greedy`` (the
greedy planners then run their Python engine).
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
            extra_compile_args=["-O2", "-std=c99"],
        ),
    ]
)
