"""Builds lightgrad's optional native kernels (lightgrad/backend/native/kernels.c, and random.c for the
random-number transforms); the metadata is in pyproject.toml. The extensions are optional: without a
C compiler the install still succeeds and lightgrad runs on its NumPy path.

The build targets the platform's baseline, with AVX2 and AVX-512 variants chosen at run time, so a
wheel runs on any x86-64. ``LIGHTGRAD_NATIVE_MARCH=native pip install -e .`` builds for this
machine's CPU only (-march=native): for a local build, never for a wheel meant for others."""

from __future__ import annotations

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# -O3 vectorises the loops; errno and traps off let sqrt and the comparisons vectorise; contraction
# off keeps every variant's rounding alike (and the Adam update equal to NumPy's). No -ffast-math:
# NaN and inf keep IEEE semantics.
_GCC_FLAGS = ["-O3", "-pthread", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-std=c11", "-g0"]


class _BuildExt(build_ext):
    """build_ext with the GCC/Clang flags where the compiler takes them."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":
            flags = list(_GCC_FLAGS)
            if os.environ.get("LIGHTGRAD_NATIVE_MARCH") == "native":
                flags += ["-march=native", "-DLG_NATIVE_ARCH"]
            for ext in self.extensions:
                ext.extra_compile_args = flags
                ext.extra_link_args = ["-s", "-pthread"]  # no symbol tables: a third of the library's size
        super().build_extensions()


setup(
    ext_modules=[Extension("lightgrad.backend.native._kernels", ["lightgrad/backend/native/kernels.c"],
                           depends=[f"lightgrad/backend/native/{h}.h" for h in
                                    ("common", "pool", "vecmath", "activation", "normalization", "optim", "pooling",
                                     "recurrent", "gemm")],
                           optional=True),
                 Extension("lightgrad.backend.native._random", ["lightgrad/backend/native/random.c"],
                           depends=["lightgrad/backend/native/common.h"], optional=True)],
    cmdclass={"build_ext": _BuildExt},
)
