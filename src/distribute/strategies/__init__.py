"""``distribute.strategies``: the concrete strategies and the input hooks they share.

Importing the package registers the default strategy with ``distribute._core.context``
(:mod:`distribute.strategies.default`), so ``distribute.get_strategy()`` works as soon as
``distribute`` is imported.
"""

from distribute.strategies import default as _default  # noqa: F401  (registers the default strategy)
