"""The two builds (setup.py for dpcore._core, CMake for dpcore::kernels) compile the same
kernel sources, and every kernel source has its public header (same stem)."""
import ast
import glob
import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _setup_sources() -> list:
    """Evaluates setup.py's `sources = ...` expression (globs only) from the repo root."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "sources" for t in node.targets):
            expr = ast.Expression(node.value)
            break
    else:
        raise AssertionError("setup.py has no `sources = ...` assignment")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return eval(compile(expr, "setup.py", "eval"), {"glob": glob.glob, "sorted": sorted})
    finally:
        os.chdir(cwd)


def _cmake_kernel_sources() -> list:
    """Expands the file(GLOB DPCORE_KERNEL_SOURCES ...) patterns of csrc/CMakeLists.txt."""
    text = (ROOT / "csrc/CMakeLists.txt").read_text()
    match = re.search(r"file\(GLOB\s+DPCORE_KERNEL_SOURCES\s+(.*?)\)", text, re.S)
    assert match, "CMakeLists.txt must glob DPCORE_KERNEL_SOURCES"
    patterns = re.findall(r'"\$\{CMAKE_CURRENT_SOURCE_DIR\}/([^"]+)"', match.group(1))
    assert patterns, "DPCORE_KERNEL_SOURCES has no source pattern"
    assert "add_library(dpcore_kernels ${DPCORE_KERNEL_SOURCES}" in text
    files = []
    for pattern in patterns:
        files += glob.glob(str(ROOT / "csrc" / pattern))
    return sorted(os.path.relpath(f, ROOT) for f in files)


def test_setup_and_cmake_compile_the_same_kernel_sources():
    setup = [os.path.normpath(s) for s in _setup_sources()]
    kernels = sorted(s for s in setup if s.startswith(os.path.join("csrc", "src") + os.sep))
    bindings = [s for s in setup if s not in kernels]
    assert kernels, "setup.py compiles no kernel source"
    assert kernels == _cmake_kernel_sources()
    assert all(b.startswith(os.path.join("csrc", "python") + os.sep) for b in bindings)
    assert os.path.join("csrc", "python", "module.cpp") in bindings


def test_every_kernel_source_has_its_header():
    # Public (installed) in include/dpcore, or private to the kernels next to the source.
    for source in sorted((ROOT / "csrc/src").glob("*.cpp")):
        header = source.stem + ".hpp"
        assert ((ROOT / "csrc/include/dpcore" / header).exists()
                or (ROOT / "csrc/src" / header).exists()), source.name


def test_every_binding_file_is_named_after_a_header():
    for binding in sorted((ROOT / "csrc/python").glob("bind_*.cpp")):
        stem = binding.stem[len("bind_"):]
        assert (ROOT / "csrc/include/dpcore" / (stem + ".hpp")).exists(), binding.name


def test_core_stub_lists_exactly_the_extension_names():
    """dpcore/_core.pyi declares every public name of dpcore._core (and no other)."""
    from dpcore import _core

    tree = ast.parse((ROOT / "dpcore/_core.pyi").read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    assert declared == {n for n in dir(_core) if not n.startswith("_")}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        methods = {f.name for f in cls.body
                   if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")}
        public = {n for n in dir(getattr(_core, cls.name)) if not n.startswith("_")}
        assert methods == public, cls.name
