"""Running from a source checkout after `pip install .`: the checkout's dpcore (no compiled
core; its _core.pyi stub does not count) defers to the installed copy instead of failing with
"cannot import name '_core'"."""
import shutil
import subprocess
import sys
from pathlib import Path

import dpcore

PACKAGE = Path(dpcore.__file__).resolve().parent


def test_a_checkout_without_the_core_uses_the_installed_copy(tmp_path):
    checkout, site = tmp_path / "checkout" / "dpcore", tmp_path / "site" / "dpcore"
    checkout.mkdir(parents=True)
    shutil.copy(PACKAGE / "__init__.py", checkout / "__init__.py")
    (checkout / "_core.pyi").write_text("# a stub is not the compiled module\n")
    shutil.copytree(PACKAGE, site, ignore=shutil.ignore_patterns("__pycache__", "data"))
    code = ("import dpcore; from dpcore import _core; from dpcore.errors import DpcoreError; "
            "print(dpcore._installed); print(_core.__file__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=checkout.parent, capture_output=True,
                          text=True, env={"PYTHONPATH": str(site.parent), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    installed, core = done.stdout.split()
    assert Path(installed) == site.resolve() and Path(core).parent == site.resolve()


def test_without_any_compiled_core_the_error_names_the_fix(tmp_path):
    checkout = tmp_path / "dpcore"
    checkout.mkdir()
    shutil.copy(PACKAGE / "__init__.py", checkout / "__init__.py")
    # -S: no site-packages, so no installed copy to defer to (CI has one)
    done = subprocess.run([sys.executable, "-S", "-c", "from dpcore import _core"], cwd=tmp_path,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "pip install ." in done.stderr
