"""isrcheck's modelling layer: declare fields, actions and invariants once, run them on any backend."""
from isrcheck.model.configuration import Configuration
from isrcheck.model.expr import DeclarationError, all_of, any_of, count_of, max_of, min_of, where
from isrcheck.model.layout import Field, Layout
from isrcheck.model.present import Line, Presentation
from isrcheck.model.spec import BoundsError, FuzzTarget, Spec, action, invariant

__all__ = ["Configuration", "DeclarationError", "BoundsError", "Field", "Layout", "Spec", "action", "invariant",
           "FuzzTarget", "Presentation", "Line", "where", "any_of", "all_of", "count_of", "min_of", "max_of"]
