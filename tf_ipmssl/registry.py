"""A registry of classes by name: the algorithms (train.mode) and the constraints.

One `Registry` holds one kind of class. `register(cls)` lists `cls` under its name and
refuses a second class of a name already listed; `registered(cls)` lists it for a `with`
block only (tests); `lookup(name)` and `names()` read it; `follow(callback)` calls
`callback(cls)` for every class listed, now and later (the gin boundary, configurables.py,
makes each one a gin name this way).

The library's own classes are listed in tf_ipmssl/library.py, which a registry imports at
its first use (`library`: the module and the attribute naming them): whatever a program
imports first, the library's algorithms and constraints are there when anything is looked
up, and a class of the user's registered from its own module comes after them.
"""
import contextlib
import importlib
from typing import Callable, Optional, Tuple


class Registry:
  """Classes of one kind by name (see the module doc)."""

  def __init__(self, kind: str, name_of: Callable[[type], str],
               check: Optional[Callable[[type], None]] = None,
               library: Optional[Tuple[str, str]] = None):
    """Args:
      kind: what the classes are, in messages ('algorithm', 'constraint').
      name_of: a class's name in the registry.
      check: raises TypeError for a class that cannot be registered.
      library: (module, attribute) of the library's classes of this kind, registered at
        the first use.
    """
    self.kind = kind
    self._name_of = name_of
    self._check = check
    self._library = library
    self._classes = {}
    self._callbacks = []

  def _load_library(self):
    if self._library is not None:
      module, attribute = self._library
      self._library = None  # Registering them below uses the registry.
      try:
        classes = getattr(importlib.import_module(module), attribute)
      except BaseException:
        self._library = (module, attribute)
        raise
      for cls in classes:
        self.register(cls)

  def register(self, cls):
    """Lists `cls` under its name and passes it to the followers; returns it (a class
    decorator). Raises ValueError when another class has that name, TypeError (from
    `check`) when `cls` cannot be registered."""
    self._load_library()
    if self._check is not None:
      self._check(cls)
    name = self._name_of(cls)
    if name in self._classes:
      raise ValueError(f'{_article(self.kind)} {self.kind} named {name!r} is already '
                       f'registered ({self._classes[name].__module__}); give the new class '
                       'another name')
    self._classes[name] = cls
    for callback in tuple(self._callbacks):
      callback(cls)
    return cls

  @contextlib.contextmanager
  def registered(self, cls):
    """Registers `cls` for the `with` block only (tests); yields it."""
    self.register(cls)
    try:
      yield cls
    finally:
      del self._classes[self._name_of(cls)]

  def follow(self, callback: Callable[[type], None]) -> None:
    """Calls `callback(cls)` for every registered class, now and at each later
    registration."""
    self._load_library()
    self._callbacks.append(callback)
    for cls in tuple(self._classes.values()):
      callback(cls)

  def lookup(self, name) -> Optional[type]:
    """The class registered as `name`, or None."""
    self._load_library()
    return self._classes.get(name)

  def names(self) -> tuple:
    """The registered names, the library's first, in registration order."""
    self._load_library()
    return tuple(self._classes)


def _article(word):
  return 'an' if word[:1] in 'aeiou' else 'a'
