"""Every module of hpcolls and solvers imports on a machine without a GPU or cupy.

Modules that only a GPU run reaches (hpcolls.routes.nccl, say) are otherwise never imported by
the CPU suites, so a broken import in one of them first shows up on the GPU machine."""
import importlib
import pkgutil

import pytest

import hpcolls
import solvers

# Entry points that run when imported (python -m hpcolls / solvers.bench) are not libraries.
_MAIN = {"hpcolls.__main__", "solvers.bench.__main__"}
# A shared library in the package that is not a Python module (LD_PRELOAD's: hpcolls/staging/pmpi_library.py).
_NOT_MODULES = {"hpcolls.libhpcolls_pmpi_staging"}


def _modules(package):
    names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [n for n in names if n not in _MAIN | _NOT_MODULES and not n.rsplit(".", 1)[-1].startswith("_")]


@pytest.mark.parametrize("name", _modules(hpcolls) + _modules(solvers))
def test_module_imports(name):
    importlib.import_module(name)
