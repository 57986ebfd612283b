"""A team's protocol versions as the command line names and lists them.

A version is a Spec subclass with a ``name`` of its own: a class that only inherits its parent's would be
taken for the parent (its traces saved in the parent's folder, the parent's expectations applied, ``show``
rendering it with the parent), so it is refused. What a version says of itself (``summary``, ``references``)
is its own, or marked as inherited: a variant's ``list`` entry must not pass off its parent's words.
"""
from __future__ import annotations

import inspect

from isrcheck.model.sources import of_object
from isrcheck.model.spec import Spec


def unnamed(cls):
    """Why ``cls`` cannot be used as a version when it has no ``name`` of its own but inherits one (else None)."""
    if "name" in vars(cls) or not cls.name:
        return None
    parent = next(k for k in cls.__mro__[1:] if "name" in vars(k))
    where = of_object(cls)
    return (f"{where + ': ' if where else ''}{cls.__name__} has no name of its own: it would be taken for "
            f"{parent.__name__} ({cls.name!r}: its traces saved as {cls.name}'s, {cls.name}'s expectations applied, "
            f"shown as {cls.name}); give it one: name = \"...\"")


def defined(module):
    """(the versions a file defines, in order: every Spec subclass with a name of its own; :func:`unnamed`'s words
    for each class there that inherits a name and is no other class's base there, a version missing its name).

    A nameless class that is a base of other classes in the file is their shared parent, not a version."""
    classes = [obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, Spec)
               and obj.__module__ == module.__name__]
    problems = [unnamed(cls) for cls in classes
                if unnamed(cls) and not any(other is not cls and issubclass(other, cls) for other in classes)]
    return [cls for cls in classes if cls.name and "name" in vars(cls)], problems


def listing(ref, classes):
    """The message for ``--spec FILE.py`` without a class: which classes to name."""
    return (f"{ref} defines {len(classes)} spec{'s' if len(classes) != 1 else ''}: name one as FILE.py:CLASS: "
            + ", ".join(f"{ref}:{cls.__qualname__} ({cls.name})" for cls in classes))


def own(cls, attr):
    """(value of ``attr``, the name of the version it is inherited from, or None when ``cls`` states it).

    A ``summary`` is a class's own attribute, else the first paragraph of its own docstring (a team writes the
    docstring first); a class that has neither inherits the nearest one along its bases."""
    for k in cls.__mro__:
        if k is Spec:
            break
        if attr in vars(k):
            value = getattr(k, attr)
        elif attr == "summary" and vars(k).get("__doc__"):
            value = " ".join(inspect.cleandoc(k.__doc__).split("\n\n")[0].split())
        else:
            continue
        return value, None if k is cls else (k.name or k.__name__)
    return getattr(cls, attr), None
