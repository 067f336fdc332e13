#!/usr/bin/env python3
"""Re-creates the real photographs in packages/engine/test/fixtures from the
Debian packages that ship them (see the README there for credits and licences).

    /usr/bin/python3 scripts/real-photo-fixtures.py

Needs python3-opencv and apt-get (after `apt-get update`): each package is fetched
with `apt-get download` into a temporary directory and unpacked with `dpkg -x`,
nothing is installed. Photos larger than 1 MP are scaled down to about 1 MP; all are
written as JPEG, quality 90. astronaut.jpg and coffee.jpg predate this script (same
source, scikit-image's sample data) and are left as they are. Also writes
mattes/potted-plant.png (see below); the other mattes come from reference-mattes.py.
"""
import bz2
import os
import subprocess
import tempfile

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "packages", "engine", "test", "fixtures")
OPENCV = "usr/share/doc/opencv-doc/examples/"
SKIMAGE = "usr/lib/python3/dist-packages/skimage/data/"
SKLEARN = "usr/lib/python3/dist-packages/sklearn/datasets/images/"
PLASMA = "usr/share/wallpapers/"

# name: (Debian package, file inside it)
SOURCES = {
    "grace-hopper": ("python-matplotlib-data", "usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"),
    "cameraman": ("python3-skimage", SKIMAGE + "camera.png"),
    "cat": ("python3-skimage", SKIMAGE + "chelsea.png"),
    "motorcycle": ("python3-skimage", SKIMAGE + "motorcycle_left.png"),
    "dog": ("opencv-doc", OPENCV + "data/chicky_512.png"),
    "squirrel": ("opencv-doc", OPENCV + "data/squirrel_cls.jpg"),
    "butterfly": ("opencv-doc", OPENCV + "data/butterfly.jpg"),
    "apple": ("opencv-doc", OPENCV + "data/apple.jpg"),
    "basketball": ("opencv-doc", OPENCV + "data/basketball1.png"),
    "messi5": ("opencv-doc", OPENCV + "data/messi5.jpg"),
    "potted-plant": ("opencv-doc", OPENCV + "alphamat/input_images/plant.jpg"),
    "raccoon": ("python3-scipy", "usr/lib/python3/dist-packages/scipy/misc/face.dat"),
    "dahlia": ("python3-sklearn", SKLEARN + "flower.jpg"),
    "pagoda": ("python3-sklearn", SKLEARN + "china.jpg"),
    "fallen-leaf": ("plasma-workspace-wallpapers", PLASMA + "FallenLeaf/contents/images/2560x1600.jpg"),
    "boats": ("plasma-workspace-wallpapers", PLASMA + "EveningGlow/contents/images/2560x1600.jpg"),
    "forest-path": ("plasma-workspace-wallpapers", PLASMA + "Path/contents/images/2560x1600.jpg"),
    "misty-lake": ("plasma-workspace-wallpapers", PLASMA + "DarkestHour/contents/images/2560x1600.jpg"),
}
MAX_PIXELS = 1_000_000


def read_image(path):
    if path.endswith("face.dat"):
        # SciPy's raccoon: bz2-compressed raw RGB, 768 x 1024.
        rgb = np.frombuffer(bz2.decompress(open(path, "rb").read()), np.uint8).reshape(768, 1024, 3)
        return np.ascontiguousarray(rgb[:, :, ::-1])
    return cv2.imread(path, cv2.IMREAD_COLOR)


def main():
    os.makedirs(os.path.join(FIXTURES, "mattes"), exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        root = os.path.join(work, "root")
        for package in sorted({package for package, _ in SOURCES.values()}):
            subprocess.run(["apt-get", "download", package], cwd=work, check=True)
        for deb in os.listdir(work):
            if deb.endswith(".deb"):
                subprocess.run(["dpkg", "-x", os.path.join(work, deb), root], check=True)
                print("unpacked", deb)
        for name, (package, path) in SOURCES.items():
            image = read_image(os.path.join(root, path))
            height, width = image.shape[:2]
            if width * height > MAX_PIXELS:
                scale = (MAX_PIXELS / (width * height)) ** 0.5
                size = (round(width * scale / 2) * 2, round(height * scale / 2) * 2)
                image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
            cv2.imwrite(os.path.join(FIXTURES, f"{name}.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
            print(f"{name}.jpg {image.shape[1]}x{image.shape[0]} from {package}: {path}")
        # The plant's reference matte is OpenCV's own: the information-flow alpha matting
        # sample's result for this photo (from a hand-drawn trimap), thresholded at half.
        alpha = cv2.imread(os.path.join(root, OPENCV + "alphamat/output_mattes/plant_result.png"), cv2.IMREAD_GRAYSCALE)
        cv2.imwrite(os.path.join(FIXTURES, "mattes", "potted-plant.png"), np.where(alpha >= 128, 255, 0).astype(np.uint8))


if __name__ == "__main__":
    main()
