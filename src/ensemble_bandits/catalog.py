"""Names used in the registry -> the classes they stand for, imported only when first looked up.

A catalog maps each name to ``"module:Class"`` (or to a class), so that listing or checking names
imports nothing: a family whose module imports torch costs nothing until one of its names is used.
"""
from __future__ import annotations

import importlib
import inspect
from collections.abc import MutableMapping


class Catalog(MutableMapping):
    """A mapping name -> class whose values are imported from ``"module:Class"`` on first access."""

    def __init__(self, kind: str, targets: dict):
        self.kind = kind
        self._targets = dict(targets)

    def __getitem__(self, name):
        target = self._targets[name]
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = self._targets[name] = getattr(importlib.import_module(module), attr)
        return target

    def __setitem__(self, name, target):
        self._targets[name] = target

    def __delitem__(self, name):
        del self._targets[name]

    def __iter__(self):
        return iter(self._targets)

    def __len__(self):
        return len(self._targets)

    def __contains__(self, name):
        return name in self._targets


def hyper(cls, spec: dict, name: str):
    """Hyper-parameter ``name`` of a registry spec for ``cls``: the spec's value, else the default
    of ``cls.__init__`` (so that a class states its defaults once, in its signature)."""
    if name in spec:
        return spec[name]
    return inspect.signature(cls.__init__).parameters[name].default
