"""A griffe extension: Sphinx cross-reference roles in docstrings (``:func:`check```) read as code.

isrcheck's docstrings are written for ``help()`` and Sphinx alike; mkdocstrings renders them as Markdown,
where a role would show as literal text. Each role becomes the code span of its target.
"""
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`~?([^`]+)`")


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)
