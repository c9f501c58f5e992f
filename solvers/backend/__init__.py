"""Array backend (numpy | cupy via ``xp``) and the counted ``Collectives`` interface."""
from .arrays import array_module, get_cupy, module_for_device, to_host
from .collectives import KINDS, Collectives, choose_kind, create_collectives

__all__ = ["KINDS", "Collectives", "array_module", "choose_kind", "create_collectives", "get_cupy",
           "module_for_device", "to_host"]
