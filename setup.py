"""Builds the dpcore._core extension from the same C++ sources as the CMake build.

The source list is csrc/src/*.cpp (the kernel library) plus csrc/python/*.cpp (bindings);
CMakeLists.txt globs the same kernel sources, and tests/unit/test_build.py checks they agree.
"""
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ParallelCompile("DPCORE_BUILD_JOBS", default=2).install()

sources = sorted(glob("csrc/src/*.cpp")) + sorted(glob("csrc/python/*.cpp"))
# Headers too, so an in-place rebuild recompiles after a header-only change.
headers = sorted(glob("csrc/include/dpcore/*.hpp")) + sorted(glob("csrc/src/*.hpp"))

ext = Pybind11Extension(
    "dpcore._core",
    sources,
    depends=headers,
    include_dirs=["csrc/include"],
    cxx_std=17,
    extra_compile_args=["-O3", "-fvisibility=hidden"],
    extra_link_args=["-pthread"],
)

setup(ext_modules=[ext], cmdclass={"build_ext": build_ext})
