"""Images in (issue 21): ``codeloop run --image shot.png``, ``@shot.png`` in a chat message.

An image is read whole, checked (a known image type whose bytes say so, not empty, under the
provider's per-image limit) and attached to the user message as :class:`ImageData`; each
adapter encodes it as its wire API expects. Images over the limit would be downscaled with
Pillow, which the project does not depend on: they are refused with how to shrink them.
A model without image input (the catalog's ``supports_vision``, the local model) is refused
before anything is sent.
"""

from __future__ import annotations

import re
from pathlib import Path

from codeloop.cli.model_choice import ModelChoice
from codeloop.environments.errors import FileTooLargeError, NotAFileError, WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.llm.types import ImageData
from codeloop.tools.files import IMAGE_TYPES

MB = 1024 * 1024
IMAGE_LIMITS = {"anthropic": 5 * MB, "openai": 20 * MB, "gemini": 20 * MB, "openai_compatible": 20 * MB}
"""Largest image each provider takes (Anthropic: 5 MB an image; Gemini: 20 MB a request inline)."""
_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
          "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}
MENTION = re.compile(r"(?<!\S)@(\S+?)[.,;:!?)\]'\"]*(?=\s|$)")
"""``@path`` at the start of a word; trailing punctuation is not part of the path."""


class ImageError(ValueError):
    """An image cannot be attached: the message says which file, why, and what to do."""


def image_type(path: str) -> str | None:
    """The media type of an image file name (png, jpg, gif, webp), else None."""
    return IMAGE_TYPES.get(Path(path).suffix.lower())


def load_image(path: Path, shown: str, provider: str, *, within: Path | None = None) -> ImageData:
    """The image at ``path`` (named ``shown`` in errors), checked for ``provider``; only a
    regular file under the provider's limit is read, and with ``within`` (an ``@`` mention)
    only one inside that workspace."""
    media_type = image_type(shown)
    if media_type is None:
        raise ImageError(f"{shown}: not an image file name; attach png, jpg, gif or webp files")
    limit = IMAGE_LIMITS.get(provider, 5 * MB)
    try:
        data = read_owned_file(path, max_bytes=limit, within=within, shown=shown)
    except FileTooLargeError as exc:
        raise ImageError(
            f"{shown} is {exc.size / MB:.1f} MB, over the {limit // MB} MB image limit of {provider}; "
            "codeloop would downscale it with Pillow, which is not installed: shrink it first "
            f"(e.g. convert {shown} -resize 50% smaller.png) or install Pillow") from None
    except NotAFileError as exc:
        if path.is_dir():
            raise ImageError(f"{shown} is a directory: pass an image file") from None
        raise ImageError(f"{exc}; pass an image file") from None
    except WorkspaceError as exc:
        raise ImageError(f"{exc}; pass an image file inside the workspace") from None
    except OSError as exc:
        raise ImageError(f"cannot read {shown}: {exc.strerror or exc}; check the path") from None
    if not data:
        raise ImageError(f"{shown} is empty: pass a real image")
    webp = media_type != "image/webp" or data[8:12] == b"WEBP"
    if not data.startswith(_MAGIC[media_type]) or not webp:
        raise ImageError(f"{shown} is not a {media_type.removeprefix('image/')} image (its bytes say otherwise): "
                         "pass the image itself, saved in the format its name says")
    return ImageData(data=data, media_type=media_type)


def vision_problem(choice: ModelChoice) -> str | None:
    """Why the chosen model cannot take images (None when it can, or nobody knows)."""
    from codeloop.llm.catalog import get_model_info
    from codeloop.profiles import create_profile

    if choice.local:
        return ("the local model takes no images: use a model with image input "
                "(e.g. set ANTHROPIC_API_KEY or OPENAI_API_KEY) or describe the image in words")
    model = create_profile(choice.profile, choice.model).model
    info = get_model_info(model)
    if info is not None and not info.supports_vision:
        return (f"the model {model} takes no images (the model catalog says so): pick one with "
                "image input (--model) or describe the image in words")
    return None


def option_images(paths: list[Path], choice: ModelChoice) -> tuple[ImageData, ...]:
    """The ``--image`` files (the user's own paths: any readable file); ImageError if one cannot go."""
    if not paths:
        return ()
    problem = vision_problem(choice)
    if problem is not None:
        raise ImageError(f"--image: {problem}")
    return tuple(load_image(p.expanduser(), str(p), choice.provider) for p in paths)


def mentioned_images(text: str, root: Path, choice: ModelChoice) -> tuple[ImageData, ...]:
    """The images a message names as ``@shot.png``, read through the workspace resolver
    (no escape from the workspace, symlinks included); ImageError if one cannot go."""
    names = [m.group(1) for m in MENTION.finditer(text) if image_type(m.group(1))]
    if not names:
        return ()
    problem = vision_problem(choice)
    if problem is not None:
        raise ImageError(f"@{names[0]}: {problem}")
    return tuple(load_image(workspace_file(root, name), f"@{name}", choice.provider, within=root) for name in names)


def workspace_file(root: Path, name: str) -> Path:
    """``name`` inside the workspace ``root``; ImageError (the resolver's words) otherwise."""
    try:
        return resolve_workspace_path(root, name, must_exist=True)
    except WorkspaceError as exc:
        raise ImageError(f"@{name}: {exc}") from None
