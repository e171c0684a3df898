"""PIL's and torchvision's numbers for the image suite (tests/test_image.c): test images made
here, and what PIL decodes from them and torchvision's transforms make of them, written as small
committed files so that the suite needs neither. Run with a Python that has torch, torchvision,
Pillow and numpy:

  python tests/reference/make_image_reference.py [IMAGES_DIR [REFERENCE]]

writes the images into IMAGES_DIR (default: tests/data/images) and the references into
REFERENCE (default: tests/reference/image_reference.safetensors). Every image is synthetic and
made from fixed seeds; PNG files that PIL cannot write (16-bit colour, Adam7 interlacing, a
palette shorter than its indices) are written by hand (png_bytes).

Images:
  photo.png, photo.jpg, photo_progressive.jpg   640 x 480 RGB, photo-like: smooth gradients, a
        fine checkerboard and grating, thin lines, flat shapes with sharp edges, a noisy patch
        (JPEG: quality 90, 4:2:0; the progressive one too)
  small.png     61 x 83 RGB cut from the photo: the checkerboard's edge, the grating
  small_444.jpg, small_420.jpg, small_422_progressive.jpg   small.png as JPEG, subsampled so
  corrupt.jpg   small_444.jpg with 16 bytes of its scan changed (libjpeg warns; PIL decodes it)
  grey.jpg, cmyk.jpg   a grey JPEG (120 x 90) and a CMYK one (Adobe, inverted; 48 x 64)
  grey.png, grey_alpha.png, rgba.png, palette.png   8-bit L, LA, RGBA and P (with tRNS) images
  grey16.png    16-bit grey with values above 255 (PIL's I;16: clipped to 255 in RGB)
  rgb16.png, rgba16.png, grey_alpha16.png   16-bit colour, by hand
  grey1.png, grey2.png   1- and 2-bit grey, odd widths; palette4.png: 4-bit, 10 colours, indices
        up to 15 (past the palette: black in PIL)
  interlaced.png, interlaced_grey4.png   Adam7-interlaced RGB and 4-bit grey, by hand
  photo.ppm, grey.pgm   binary P6 and P5 with a comment in the header

References (u8 unless said otherwise; PIL opens every file with Image.open(p).convert("RGB")):
  decode:NAME               the decoded pixels (H, W, 3) of each small file; (H, W, 1) where
                            the three channels are equal (grey)
  metadata fnv1a64:NAME     for the 640 x 480 files, the FNV-1a 64-bit hash of the decoded bytes
  imagenet.resize           torchvision Resize(256)(photo.png): (256, 341, 3)
  metadata imagenet.crop    then CenterCrop(224): where it lies in imagenet.resize, "top left"
  imagenet.tensor           then ToTensor and Normalize(ImageNet mean, std): f32 (3, 224, 224)
  resize:NAME               Resize(...) of small.png, photo.ppm or grey.pgm, as RESIZES lists
  crop:NAME                 CenterCrop((h, w)) of photo.ppm, as CROPS lists
  to_tensor.small, normalize.small   ToTensor(CenterCrop(16)(small.png)) (f32 (3, 16, 16)), then
                            Normalize((0.5, 0.25, 0.125), (0.2, 0.3, 0.7))
and the versions of Pillow, its libjpeg-turbo and zlib, torchvision, torch and numpy as
metadata.
"""
import io
import os
import struct
import sys
import warnings
import zlib

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image, features
from torchvision import transforms as T

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "data"))
from make_safetensors import save  # noqa: E402  (the hand-written safetensors writer)

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


# ---- images ------------------------------------------------------------------------------------

def photo():
    """640 x 480 RGB: gradients, shapes with sharp edges, fine textures, lines, noise."""
    w, h = 640, 480
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([40 + 150 * x / w + 30 * np.sin(y / 37.0),
                    30 + 180 * y / h + 25 * np.cos(x / 53.0),
                    200 - 240 * np.hypot(x - w * 0.6, y - h * 0.4) / np.hypot(w, h)], -1)
    img[(x - 180) ** 2 + (y - 300) ** 2 < 70 ** 2] = [220, 40, 30]
    img[(x > 380) & (x < 560) & (y > 60) & (y < 150)] = [20, 60, 200]
    img[(y > 330) & (y < 450) & (x - 400 > (450 - y) * 0.8) & (x < 560)] = [240, 230, 60]
    xi, yi = x.astype(int), y.astype(int)
    checker = (x > 60) & (x < 160) & (y > 40) & (y < 140)
    img[checker] = np.where((((xi + yi) % 2) == 0)[checker][:, None], 250, 10)
    grating = (x > 200) & (x < 330) & (y > 40) & (y < 140)
    img[grating] = (128 + 100 * np.sin(x * 2.6 + y * 0.4))[grating][:, None]
    for k in range(8):
        img[(np.abs(y - (180 + 6 * k) - 0.15 * x) < 0.5) & (x > 250) & (x < 620)] = 0
    rng = np.random.default_rng(1)
    noisy = (x > 30) & (x < 130) & (y > 380) & (y < 460)
    img[noisy] += rng.normal(0, 25, (int(noisy.sum()), 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def png_bytes(pixels, depth, color_type, palette=None, interlaced=False):
    """A PNG of `pixels` (H, W, channels) as integers of `depth` bits, written by hand."""
    h, w = pixels.shape[:2]

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))

    def rows(sub):
        out = b""
        for row in sub:
            flat = row.reshape(-1).astype(np.int64)
            if depth == 16:
                data = flat.astype(">u2").tobytes()
            elif depth == 8:
                data = flat.astype(np.uint8).tobytes()
            else:  # packed, most significant bits first
                per = 8 // depth
                flat = np.concatenate([flat, np.zeros((-len(flat)) % per, np.int64)])
                data = bytes(int(sum(int(v) << (8 - depth * (i + 1)) for i, v in
                                     enumerate(flat[j:j + per])))
                             for j in range(0, len(flat), per))
            out += b"\x00" + data
        return out

    if interlaced:  # Adam7: seven passes of sub-images, empty ones left out
        raw = b""
        for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]:
            sub = pixels[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += rows(sub)
    else:
        raw = rows(pixels)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth,
                                                           color_type, 0, 0, int(interlaced)))
    if palette is not None:
        data += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    return data + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def encode(im, fmt, **kw):
    out = io.BytesIO()
    im.save(out, fmt, **kw)
    return out.getvalue()


def make_images(photo_rgb):
    """{file name: bytes}."""
    rng = np.random.default_rng(7)
    im = Image.fromarray(photo_rgb)
    small = Image.fromarray(photo_rgb[60:121, 140:223])  # 61 x 83: checker, grating, gradient
    grey = im.convert("L").resize((120, 90), Image.BOX)
    tiny = im.resize((64, 48), Image.BOX)
    alpha = Image.fromarray(rng.integers(0, 256, (48, 64), dtype=np.uint8))
    files = {
        "photo.png": encode(im, "PNG", optimize=True),
        "photo.jpg": encode(im, "JPEG", quality=90),
        "photo_progressive.jpg": encode(im, "JPEG", quality=90, progressive=True),
        "small.png": encode(small, "PNG", optimize=True),
        "small_444.jpg": encode(small, "JPEG", quality=85, subsampling=0),
        "small_420.jpg": encode(small, "JPEG", quality=85, subsampling=2),
        "small_422_progressive.jpg": encode(small, "JPEG", quality=85, subsampling=1,
                                            progressive=True),
        "grey.jpg": encode(grey, "JPEG", quality=90),
        "cmyk.jpg": encode(tiny.convert("CMYK"), "JPEG", quality=90),
        "grey.png": encode(grey, "PNG", optimize=True),
        "grey_alpha.png": encode(Image.merge("LA", [tiny.convert("L"), alpha]), "PNG"),
        "rgba.png": encode(Image.merge("RGBA", [*tiny.split(), alpha]), "PNG"),
        "palette.png": encode(tiny.quantize(colors=200), "PNG", transparency=bytes(range(200))),
    }
    # bytes of the scan changed (none to 0xff, so no marker appears): libjpeg warns and goes on
    corrupt = bytearray(files["small_444.jpg"])
    at = len(corrupt) * 3 // 5
    corrupt[at:at + 16] = bytes((b + 91) % 255 for b in corrupt[at:at + 16])
    files["corrupt.jpg"] = bytes(corrupt)
    grey16 = (np.asarray(tiny.convert("L"), np.int64) * 4).astype(np.uint16)  # 0 .. 1020
    files["grey16.png"] = encode(Image.fromarray(grey16), "PNG")
    wide = rng.integers(0, 65536, (24, 33, 4))
    files["rgb16.png"] = png_bytes(wide[..., :3], 16, 2)
    files["rgba16.png"] = png_bytes(wide, 16, 6)
    files["grey_alpha16.png"] = png_bytes(wide[..., :2], 16, 4)
    files["grey1.png"] = png_bytes(rng.integers(0, 2, (13, 37, 1)), 1, 0)
    files["grey2.png"] = png_bytes(rng.integers(0, 4, (11, 29, 1)), 2, 0)
    files["palette4.png"] = png_bytes(rng.integers(0, 16, (12, 21, 1)), 4, 3,
                                      palette=rng.integers(0, 256, (10, 3)))
    files["interlaced.png"] = png_bytes(np.asarray(tiny)[:29, :37], 8, 2, interlaced=True)
    files["interlaced_grey4.png"] = png_bytes(rng.integers(0, 16, (19, 23, 1)), 4, 0,
                                              interlaced=True)
    files["photo.ppm"] = (b"P6\n# a comment\n64 48\n255\n" + np.asarray(tiny).tobytes())
    files["grey.pgm"] = b"P5 120 90 255\n" + np.asarray(grey).tobytes()
    return files


# ---- references --------------------------------------------------------------------------------

BIG = ("photo.png", "photo.jpg", "photo_progressive.jpg")

# name: (source file, torchvision Resize arguments)
M = T.InterpolationMode
# (Pillow 13 resamples vertically first where the height shrinks by more than twice as many
# pixels as the width: h29_w120, h5_w80 and order_vertical; order_tie, at exactly twice, and
# the others horizontally first.)
RESIZES = {
    "shorter40": ("small.png", dict(size=40)),
    "shorter40_max50": ("small.png", dict(size=40, max_size=50)),
    "h29_w120": ("small.png", dict(size=(29, 120))),
    "h5_w80": ("small.png", dict(size=(5, 80))),
    "order_tie": ("small.png", dict(size=(41, 73))),
    "order_vertical": ("small.png", dict(size=(39, 73))),
    "width_only": ("small.png", dict(size=(61, 30))),
    "height_only": ("small.png", dict(size=(20, 83))),
    "one_pixel": ("small.png", dict(size=(1, 1))),
    "column": ("small.png", dict(size=(5, 1))),
    "nearest": ("small.png", dict(size=(25, 37), interpolation=M.NEAREST)),
    "nearest_up": ("photo.ppm", dict(size=(53, 71), interpolation=M.NEAREST)),
    "bicubic": ("small.png", dict(size=(30, 41), interpolation=M.BICUBIC)),
    "bicubic_up": ("photo.ppm", dict(size=(61, 83), interpolation=M.BICUBIC)),
    "box": ("small.png", dict(size=(30, 41), interpolation=M.BOX)),
    "hamming": ("small.png", dict(size=(30, 41), interpolation=M.HAMMING)),
    "lanczos": ("small.png", dict(size=(30, 41), interpolation=M.LANCZOS)),
    "lanczos_up": ("photo.ppm", dict(size=(57, 77), interpolation=M.LANCZOS)),
    "shorter60_up": ("photo.ppm", dict(size=60)),
    "tall": ("grey.pgm", dict(size=(171, 7))),
}

# name: (height, width) of a CenterCrop of photo.ppm (48 x 64)
CROPS = {
    "even_odd": (31, 33),  # offsets 8.5 -> 8 and 15.5 -> 16: halves to even
    "half_down": (45, 59),  # 1.5 -> 2, 2.5 -> 2
    "padded_height": (55, 40),
    "padded_both": (51, 67),
}


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def references(folder):
    tensors, metadata = {}, {}

    def opened(name):
        return Image.open(os.path.join(folder, name)).convert("RGB")

    for name in sorted(os.listdir(folder)):
        pixels = np.asarray(opened(name))
        if name in BIG:
            metadata["fnv1a64:" + name] = fnv1a64(pixels.tobytes())
        elif (pixels == pixels[..., :1]).all():  # grey: one channel of the three
            tensors["decode:" + name] = pixels[..., :1]
        else:
            tensors["decode:" + name] = pixels
    photo = opened("photo.png")
    resized = T.Resize(256)(photo)
    cropped = T.CenterCrop(224)(resized)
    tensors["imagenet.resize"] = np.asarray(resized)
    # the crop as where it lies in the resized image (rather than its pixels)
    top, left = int(round((resized.height - 224) / 2.0)), int(round((resized.width - 224) / 2.0))
    assert (np.asarray(cropped) == np.asarray(resized)[top:top + 224, left:left + 224]).all()
    metadata["imagenet.crop"] = f"{top} {left}"
    full = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                      T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])(photo)
    tensors["imagenet.tensor"] = full.numpy()
    for name, (source, kw) in RESIZES.items():
        tensors["resize:" + name] = np.asarray(T.Resize(**kw)(opened(source)))
    for name, size in CROPS.items():
        tensors["crop:" + name] = np.asarray(T.CenterCrop(size)(opened("photo.ppm")))
    x = T.ToTensor()(T.CenterCrop(16)(opened("small.png")))
    tensors["to_tensor.small"] = x.numpy()
    tensors["normalize.small"] = T.Normalize((0.5, 0.25, 0.125), (0.2, 0.3, 0.7))(x).numpy()
    metadata.update({
        "pillow": PIL.__version__, "libjpeg_turbo": str(features.version("libjpeg_turbo")),
        "zlib": str(features.version("zlib")), "torchvision": torchvision.__version__,
        "torch": torch.__version__, "numpy": np.__version__,
        "script": "tests/reference/make_image_reference.py",
    })
    return ({k: torch.from_numpy(np.array(v)) for k, v in tensors.items()},  # (copies)
            dict(sorted(metadata.items())))


def main():
    # PIL warns that a palette image's transparency is bytes: it is, on purpose
    warnings.filterwarnings("ignore", "Palette images with Transparency")
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, os.pardir, "data", "images")
    folder = os.path.normpath(folder)
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "image_reference.safetensors")
    os.makedirs(folder, exist_ok=True)
    for name, data in make_images(photo()).items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    tensors, metadata = references(folder)
    save(out, tensors, metadata)
    total = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    print(f"{folder}: {len(os.listdir(folder))} images, {total} bytes; {out}: "
          f"{len(tensors)} tensors, {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
