"""Image files as ImageExampleGen converts them for training, with Pillow.

ImageExampleGen and the predict command both convert with `convert`; this
module lets Pillow open HEIC/HEIF photos too (pi-heif's decoder); Pillow
reads AVIF itself.
Why and how: docs/input-data.md#image-folders---input-format-images.
"""

import numpy as np
import pi_heif
from PIL import Image, ImageOps

from records import features

# The formats of image folders, by name: those Pillow decodes (GIF: its
# first frame; TIFF: its first page; HEIC/HEIF, an iPhone's photos: with
# pi-heif, which applies their HEIF rotation and resets their EXIF
# orientation, as the HEIF format says; AVIF, as web pages and some phones
# save it: Pillow's own decoder, which gives its rotation as an EXIF
# orientation; JFIF: a JPEG as browsers on Windows save it).
IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.jfif', '.bmp', '.gif', '.webp',
                    '.tif', '.tiff', '.heic', '.heif', '.avif')

pi_heif.register_heif_opener()


def convert(image: Image.Image, mode: str) -> Image.Image:
  """Returns `image` upright by its EXIF orientation, in PIL mode `mode`.

  Phones store portraits as landscape pixels plus a rotation tag. 16-bit
  images keep their 8 high bits. Transparency is composited on
  features.TRANSPARENT_BACKGROUND.

  Args:
    image: a decoded image.
    mode: 'L' or 'RGB'.
  """
  return _to_mode(ImageOps.exif_transpose(image), mode)


def _to_mode(image: Image.Image, mode: str) -> Image.Image:
  """`image` in PIL mode 'L' or 'RGB', whatever mode it was decoded in.

  Raises:
    ValueError: floating-point pixels, whose range the file does not say.
  """
  if image.mode == 'F':
    # Pillow would clip them at 0 and 255: images of 0..1 would turn black.
    raise ValueError('32-bit floating-point pixels, whose range the file '
                     'does not say: save it with 8- or 16-bit pixels')
  if image.mode in ('I;16', 'I;16B', 'I;16L', 'I'):
    # Pillow's own conversion clips 16-bit values at 255: scale instead (a
    # 32-bit image as 16-bit values, as scientific cameras save them).
    image = Image.fromarray((np.clip(np.asarray(image, dtype=np.int64), 0,
                                     65535) >> 8).astype(np.uint8), 'L')
  if 'transparency' in image.info or image.mode in ('PA', 'LA', 'La'):
    image = image.convert('RGBA')  # Palette or colour-key transparency too.
  if image.mode in ('RGBA', 'RGBa'):
    background = Image.new('RGBA', image.size,
                           features.TRANSPARENT_BACKGROUND + (255,))
    image = Image.alpha_composite(background, image.convert('RGBA'))
  return image.convert(mode)
