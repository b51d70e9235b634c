"""``distribute.compat``: older API versions kept for code ported from them.

``distribute.compat.v1`` holds the names of ``tf.compat.v1.distribute``.
"""

from distribute.compat import v1

__all__ = ["v1"]
