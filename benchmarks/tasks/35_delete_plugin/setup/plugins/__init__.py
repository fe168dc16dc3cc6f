"""Text plugins: each module has NAME and transform(text)."""

from plugins import reverse, rot13, shout

PLUGINS = {module.NAME: module.transform for module in (reverse, rot13, shout)}
