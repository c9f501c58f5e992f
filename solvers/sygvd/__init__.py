"""The sygvd driver (``sygvd``) and its command line (``python -m solvers.sygvd``)."""
from .driver import sygvd

__all__ = ["sygvd"]
