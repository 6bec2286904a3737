"""Document a re-exported constant by the ``#:`` comment where it is defined.

``parcv.stats.TESTS`` is defined, with its ``#:`` comment, in ``parcv.stats.multiple``
and re-exported by ``parcv.stats``. autodoc looks for the comment in ``parcv.stats`` only
and, finding none, shows the docstring of the value's type (a tuple's, a mapping's). This
hook looks for the comment in the submodules of the package instead.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from sphinx.pycode import ModuleAnalyzer, PycodeError


def _defining_comment(package: str, name: str) -> list[str] | None:
    module = importlib.import_module(package)
    names = [package]
    if hasattr(module, "__path__"):
        names += [m.name for m in pkgutil.iter_modules(module.__path__, f"{package}.")]
    for modname in names:
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except PycodeError:
            continue
        if ("", name) in docs:
            return list(docs[("", name)])
    return None


def _replace_type_docstring(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what != "data":
        return
    package, _, attr = name.rpartition(".")
    comment = _defining_comment(package, attr)
    if comment is not None:
        lines[:] = comment


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-process-docstring", _replace_type_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
