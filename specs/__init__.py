"""Protocol versions: one module each, registered by name."""
from specs.hw_truncation import HwTruncation
from specs.kip_101 import Kip101
from specs.kip_279 import Kip279
from specs.kip_320 import Kip320

SPECS = {cls.name: cls for cls in (HwTruncation, Kip101, Kip279, Kip320)}


def spec_class(name):
    """The spec class registered under ``name`` (KeyError if none)."""
    return SPECS[name]
